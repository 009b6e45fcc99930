"""``diagnose``: from an error (raised, or pasted as text) to a :class:`Diagnosis`.

Rules are tried in catalog order against each link of the error's chain; only when none
matches the error itself are the framework's native log lines read for signatures, so a
warning TensorFlow logs at import never outranks the error the cell raised.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from ..telemetry.units import format_bytes
from ..watchdog.judgement import BUSY, IDLE, HangEvidence
from .builds import build_fields
from .context import Context, DeviceMemory
from .evidence import memory_evidence
from .facts import extract_facts, fill
from .likely import likely_rule
from .model import Diagnosis, FactValue, Kind, Remedy
from .remedies import GPU_ONLY_REMEDIES, STEP_TIMEOUT_REMEDIES, resolved
from .report import ErrorLink, ErrorReport, report_from_exception, report_from_text
from .rules import PLAIN_PYTHON_TYPES, RULES, Rule, first_match
from .stack import Framework, Stack, Vendor, stack_of_text
from .xid import xid_facts

#: Words of an error that put it on a GPU although it names no device.
_GPU_WORDS = re.compile(r"CUDA|GPU|ROCm|HIP|MPS|Metal|cuDNN|cuBLAS|NCCL", re.IGNORECASE)
#: The host's allocators, named by their own errors (PyTorch's ``DefaultCPUAllocator``).
_CPU_ALLOCATORS = re.compile(r"CPUAllocator|alloc_cpu")


def diagnose(error: BaseException | str, context: Context | None = None) -> Diagnosis:
    """Say what went wrong in ``error``, with the facts that prove it and what to do.

    Parameters
    ----------
    error
        An exception (its whole chain is read: causes, contexts, notes), or error text
        pasted from a notebook or a log.
    context
        What the guard knows beyond the error: the cell's native log lines, memory peaks,
        the framework's settings. Outside a guarded cell, the installed TensorFlow version
        and the environment.

    Returns
    -------
    Diagnosis
        ``rule_id`` is ``"unknown"`` when no rule recognises the error: never a GPU diagnosis
        for an ordinary Python error.
    """
    context = context or Context.of_this_process()
    if isinstance(error, str):
        report = report_from_text(error, context.log_lines)
    else:
        report = report_from_exception(error, context.log_lines)
    found = find_rule(report, context.previous_kind, context.watchdog_interrupted)
    if found is None:
        return _unknown(report)
    rule, matched = found
    texts = [link.text for link in report.links] + list(report.log_lines)
    facts = {**extract_facts(texts), **xid_facts(texts)}
    stack = stack_of(report, context).raised_in(matched)
    evidence: list[str] = []
    if rule.kind is Kind.OUT_OF_MEMORY:
        evidence += memory_evidence(facts, context)
    evidence += _settings_evidence(rule, context, stack)
    on_cpu = _on_cpu(facts, context, matched)
    named = {**facts, **_framework_names(stack)}
    return Diagnosis(
        rule_id=rule.id,
        kind=rule.kind,
        title=fill(rule.title, {**named, "memory_of": "CPU" if on_cpu else "GPU"}),
        summary=fill(rule.summary, named),
        facts=facts,
        remedies=_remedies(rule, facts, context, on_cpu, stack),
        evidence=tuple(evidence),
        matched=matched,
        error_type=report.error_type,
    )


def stack_of(report: ErrorReport, context: Context) -> Stack:
    """The error's stack: its own words first, then what the guard saw of the cell (the
    frameworks imported, and NVML's devices, which are NVIDIA's)."""
    texts = (*[link.text for link in report.links], *report.log_lines)
    type_names = [name for link in report.links for name in link.type_names[:1]]
    words = stack_of_text(texts, type_names, report.frame_files)
    watched_nvidia = any(not device.simulated for device in context.devices)
    return words.filled_in(context.frameworks, Vendor.NVIDIA if watched_nvidia else None)


def _framework_names(stack: Stack) -> dict[str, FactValue]:
    """``{framework}`` and ``{Framework}`` of summaries: the framework that raised the error."""
    name = stack.framework_name
    return {"framework": name or "the framework", "Framework": name or "The framework"}


def find_rule(
    report: ErrorReport, previous_kind: Kind | None = None, watchdog_interrupted: bool = False
) -> tuple[Rule, str] | None:
    """The first rule that recognises the error, and the line it recognised.

    The error's own text decides first. A symptom whose cause the framework logs defers to a
    rule that recognises the log; the log alone decides when nothing recognises the error, and
    the second stage (:mod:`.likely`) reads the families of evidence when no rule does.
    """
    context_texts = (*[link.text for link in report.links], *report.log_lines)
    for rule in RULES:
        if rule.after_watchdog_interrupt and not watchdog_interrupted:
            continue
        texts = tuple(link.text for link in report.links if _applies(rule, link))
        matched = first_match(rule.signatures, texts)
        if matched is not None and _corroborated(rule, report, context_texts, previous_kind):
            if rule.cause_in_log:
                return _rule_in_log(report, context_texts, previous_kind) or (rule, matched)
            return rule, matched
    return (
        _rule_in_log(report, context_texts, previous_kind)
        or _rule_in_log(report, context_texts, previous_kind, symptoms=True)
        or likely_rule(report)
    )


def _rule_in_log(
    report: ErrorReport,
    context_texts: tuple[str, ...],
    previous_kind: Kind | None,
    symptoms: bool = False,
) -> tuple[Rule, str] | None:
    """The first rule whose signature is in the framework's log of the cell.

    Causes are looked for first; ``symptoms`` then allows the rules that defer to a cause.
    """
    if not report.raised_by_framework or not report.log_lines:
        return None
    own_texts = tuple(link.text for link in report.links)
    for rule in RULES:
        if not rule.in_log or rule.types or rule.cause_in_log is not symptoms:
            continue
        if rule.log_only_if and first_match(rule.log_only_if, own_texts) is None:
            continue
        matched = first_match(rule.signatures, report.log_lines)
        if matched is not None and _corroborated(rule, report, context_texts, previous_kind):
            return rule, matched
    return None


def _applies(rule: Rule, link: ErrorLink) -> bool:
    short_names = {name.rsplit(".", 1)[-1] for name in link.type_names[:1]}
    all_names = set(link.type_names) | {name.rsplit(".", 1)[-1] for name in link.type_names}
    if rule.types:
        return bool(all_names & set(rule.types))
    return not (short_names & PLAIN_PYTHON_TYPES)


def _corroborated(
    rule: Rule, report: ErrorReport, texts: tuple[str, ...], previous_kind: Kind | None
) -> bool:
    if rule.in_source and first_match(rule.in_source, report.source_lines) is None:
        return False
    if not rule.corroboration:
        return True
    if rule.after is not None and previous_kind is rule.after:
        return True
    return first_match(rule.corroboration, texts) is not None


def _unknown(report: ErrorReport) -> Diagnosis:
    short = report.error_type.rsplit(".", 1)[-1] or "This error"
    return Diagnosis(
        rule_id="unknown",
        kind=Kind.UNKNOWN,
        title="No GPU cause recognised",
        summary=f"{short} does not match a known GPU, driver or data failure.",
        error_type=report.error_type,
    )


def _settings_evidence(rule: Rule, context: Context, stack: Stack) -> list[str]:
    """TensorFlow's memory settings, which the guard reads: only for TensorFlow's errors."""
    lines: list[str] = []
    if Framework.TENSORFLOW not in stack.frameworks:
        return lines
    if rule.kind is Kind.OUT_OF_MEMORY and context.memory_growth is False:
        lines.append("TensorFlow's memory growth is off: it reserved most of the GPU at start.")
    if rule.kind is Kind.OUT_OF_MEMORY and context.xla and rule.id != "oom.xla":
        lines.append("XLA auto-clustering is on (TF_XLA_FLAGS).")
    return lines


def _remedies(
    rule: Rule, facts: dict[str, FactValue], context: Context, on_cpu: bool, stack: Stack
) -> tuple[Remedy, ...]:
    fields = {
        **facts,
        **_template_fields(facts, context, stack),
        "memory_of": "CPU" if on_cpu else "GPU",
    }
    order = [remedy for remedy in rule.remedies if not (on_cpu and remedy in GPU_ONLY_REMEDIES)]
    if "other_processes" in fields and "stale_process" in order:
        order.remove("stale_process")
        order.insert(0, "stale_process")  # nothing else helps while another process holds it
    if rule.kind is Kind.OUT_OF_MEMORY and context.xla and "xla_off" not in order:
        order.append("xla_off")
    if rule.kind is Kind.HANG:
        order = _follow_the_stall(order, context.hang)
    spelled = (resolved(remedy_id, fields, context.gpu_initialised, stack) for remedy_id in order)
    return tuple(remedy for remedy in spelled if remedy is not None)


def _follow_the_stall(order: list[str], hang: HangEvidence | None) -> list[str]:
    """An idle GPU, or the person's code stuck on a thread the framework runs it on (tf.data's,
    for a generator), waited for input: the timeout's advice does not apply; a busy GPU ran
    one long kernel: the input pipeline is not the cause."""
    state = hang.gpu_state if hang is not None else None
    stall = hang.stall if hang is not None else None
    in_the_input = stall is not None and stall.where.worker is not None
    if state == IDLE or in_the_input:
        return [remedy for remedy in order if remedy not in STEP_TIMEOUT_REMEDIES]
    if state == BUSY:
        return [remedy for remedy in order if remedy != "check_input_pipeline"]
    return order


def _on_cpu(facts: Mapping[str, FactValue], context: Context, matched: str) -> bool:
    """The failure was on the CPU: the error names it (a CPU-only run), or it names neither a
    device nor a GPU's library (XLA's, JAX's messages) and every GPU watched is simulated,
    standing for the CPU's memory."""
    device = facts.get("device")
    if isinstance(device, str):
        return device.startswith("CPU")
    if _CPU_ALLOCATORS.search(matched):
        return True
    if _GPU_WORDS.search(matched):
        return False
    return bool(context.devices) and all(memory.simulated for memory in context.devices)


def _template_fields(
    facts: dict[str, FactValue], context: Context, stack: Stack
) -> dict[str, FactValue]:
    """Values remedies' steps may name besides the facts: versions, the device's index.

    TensorFlow's build (its CUDA, cuDNN and the driver they need) only for TensorFlow's
    errors: another framework's error does not run on TensorFlow's CUDA.
    """
    fields: dict[str, FactValue] = {}
    device = facts.get("device")
    if isinstance(device, str) and device.rsplit(":", 1)[-1].isdigit():
        fields["device_index"] = device.rsplit(":", 1)[-1]
    if Framework.TENSORFLOW in stack.frameworks:
        fields.update(build_fields(context.tensorflow_version))
    visible = context.environment.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        fields["cuda_visible_devices"] = repr(visible)
    others = _other_processes(context.devices)
    if others:
        fields["other_processes"] = others
    return fields


def _other_processes(devices: Iterable[DeviceMemory]) -> str:
    held = [
        f"pid {pid} holds {format_bytes(used)} on GPU {device.index}"
        for device in devices
        for pid, used in device.other_processes
        if device.total_bytes and used > 0.3 * device.total_bytes
    ]
    return ", ".join(held)
