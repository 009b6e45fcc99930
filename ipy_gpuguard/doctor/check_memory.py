"""Checks of GPU memory: the memory settings of the framework the person trains on (TensorFlow's,
or JAX's under Keras on JAX), and other processes holding memory."""

from __future__ import annotations

from collections.abc import Mapping

from ..telemetry.framework import imported_keras_backend
from ..telemetry.units import format_bytes
from .findings import Findings
from .model import Status, Verdict

#: TensorFlow reads ``TF_FORCE_GPU_ALLOW_GROWTH`` as exactly ``true`` or ``false``, and logs an
#: error for anything else; ``TF_GPU_ALLOCATOR`` knows these two, and falls back to BFC.
_GROWTH_VALUES = ("true", "false")
_ALLOCATORS = ("cuda_malloc_async", "cuda_malloc")
#: Another process holding this share of a GPU matters; a display server's few hundred MiB not.
SHARED_FRACTION = 0.05


def memory_settings(findings: Findings) -> Verdict | None:
    """Memory growth, the allocator, XLA, and whether they can still change in this process;
    ``None`` (no row) without TensorFlow, whose settings these are. Where Keras trains on JAX
    (TensorFlow then often only feeds it through ``tf.data``), JAX's preallocation instead."""
    if keras_backend(findings) == "jax":
        return _jax_memory_settings(findings)
    if findings.installed("tensorflow") is None:
        return None
    environ = findings.machine.environ
    growth_variable = environ.get("TF_FORCE_GPU_ALLOW_GROWTH")
    allocator = environ.get("TF_GPU_ALLOCATOR")
    settings = findings.settings
    growth = (
        settings.memory_growth if settings.memory_growth is not None else growth_variable == "true"
    )
    details = [
        _growth_line(growth, growth_variable),
        f"allocator: {allocator} (TF_GPU_ALLOCATOR)"
        if allocator
        else "allocator: TensorFlow's BFC (default)",
        _initialised_line(findings),
        _xla_line(environ),
    ]
    if growth_variable is not None and growth_variable not in _GROWTH_VALUES:
        return Verdict(
            Status.WARNING,
            f"TF_FORCE_GPU_ALLOW_GROWTH={growth_variable!r} is not understood: TensorFlow takes "
            "exactly 'true' or 'false', and ignores anything else",
            tuple(details),
            findings.remedies("memory_growth"),
        )
    if allocator is not None and allocator not in _ALLOCATORS:
        return Verdict(
            Status.WARNING,
            f"TF_GPU_ALLOCATOR={allocator!r} is not an allocator TensorFlow knows "
            f"({' or '.join(_ALLOCATORS)}): it uses its default BFC allocator",
            tuple(details),
            findings.remedies("cuda_malloc_async"),
        )
    shared = _held_text(findings, SHARED_FRACTION)
    if shared and not growth and allocator != "cuda_malloc_async":
        return Verdict(
            Status.WARNING,
            f"memory growth is off on a shared GPU ({shared}): TensorFlow reserves almost all "
            "the memory left when it starts, and the other processes then run out",
            tuple(details),
            findings.remedies("memory_growth", "cuda_malloc_async"),
        )
    found = "memory growth on" if growth else "memory growth off"
    found += f", {allocator} allocator" if allocator else ", BFC allocator"
    return Verdict(Status.OK, found, tuple(details))


def keras_backend(findings: Findings) -> str | None:
    """The backend Keras 3 trains on here: the imported Keras' own, else the one Keras will
    take as it is imported, ``KERAS_BACKEND`` over ``keras.json``; ``None`` where none says
    (Keras then trains on TensorFlow)."""
    imported = imported_keras_backend(findings.machine.modules)
    machine = findings.machine
    return imported or machine.environ.get("KERAS_BACKEND") or machine.configured_keras_backend


def _jax_memory_settings(findings: Findings) -> Verdict:
    """JAX's preallocation (75% of each GPU as it starts, unless told otherwise), a warning on
    a GPU other processes share."""
    environ = findings.machine.environ
    preallocates = environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "true").lower() not in (
        "false",
        "0",
    )
    fraction = environ.get("XLA_PYTHON_CLIENT_MEM_FRACTION")
    share = f"{fraction} (XLA_PYTHON_CLIENT_MEM_FRACTION)" if fraction else "75%"
    details = (
        f"Keras trains on JAX, which reserves {share} of each GPU when it starts"
        if preallocates
        else "Keras trains on JAX, which takes GPU memory as it needs it "
        "(XLA_PYTHON_CLIENT_PREALLOCATE=false)",
        "TensorFlow, where it only feeds the fit through tf.data, needs no GPU: "
        "tf.config.set_visible_devices([], 'GPU') keeps it off the GPU",
        _xla_line(environ),
    )
    shared = _held_text(findings, SHARED_FRACTION)
    if shared and preallocates:
        return Verdict(
            Status.WARNING,
            f"JAX preallocates on a shared GPU ({shared}): it reserves {share} of the memory "
            "when it starts, and it or the other processes then run out",
            details,
            findings.remedies_for("jax", ("memory_growth",), {}),
        )
    found = f"JAX preallocates {share}" if preallocates else "JAX preallocation off"
    return Verdict(Status.OK, found, details)


def _growth_line(growth: bool, variable: str | None) -> str:
    if growth:
        source = " (TF_FORCE_GPU_ALLOW_GROWTH)" if variable == "true" else ""
        return f"memory growth on{source}: TensorFlow takes GPU memory as it needs it"
    return "memory growth off: TensorFlow reserves almost all of each GPU's memory when it starts"


def _initialised_line(findings: Findings) -> str:
    if findings.gpu_initialised:
        return (
            "TensorFlow has already set up the GPU in this process: memory growth and the "
            "allocator can no longer change here (restart the kernel to change them)"
        )
    if "tensorflow" in findings.machine.modules:
        return "TensorFlow is imported here but has not set up the GPU: settings can still change"
    return "TensorFlow is not imported in this process: settings can still change"


def _xla_line(environ: Mapping[str, str]) -> str:
    flags = [
        f"{name}={environ[name]}" for name in ("TF_XLA_FLAGS", "XLA_FLAGS") if environ.get(name)
    ]
    return f"XLA: {'; '.join(flags)}" if flags else "XLA: no TF_XLA_FLAGS or XLA_FLAGS set"


def _held_text(findings: Findings, fraction: float) -> str:
    """``GPU 0: pid 4242 (python) holds 3.1 GiB`` for each visible GPU where other processes
    hold at least ``fraction`` of its memory."""
    return "; ".join(f"GPU {index}: {held}" for index, held in _others_by_gpu(findings, fraction))


def _others_by_gpu(findings: Findings, fraction: float) -> list[tuple[int, str]]:
    rows = []
    name_of = findings.machine.process_name
    for index, gpu in enumerate(findings.nvml.visible_gpus()):
        total = gpu.total_bytes or 0
        held = [
            f"pid {pid}{f' ({name})' if (name := name_of(pid)) else ''} holds {format_bytes(used)}"
            for pid, used in gpu.other_processes
            if used >= fraction * total
        ]
        if held:
            rows.append((index, ", ".join(held)))
    return rows


def _unattributed_text(findings: Findings) -> str:
    """``GPU 0: 2 processes hold 30.0 GiB in all, this one among them if it uses the GPU``
    for each visible GPU where NVML lists processes it cannot name as others."""
    rows = []
    for index, gpu in enumerate(findings.nvml.visible_gpus()):
        if gpu.unattributed:
            count = len(gpu.unattributed)
            held = format_bytes(sum(used for _, used in gpu.unattributed))
            rows.append(
                f"GPU {index}: {count} process{'es' if count > 1 else ''} "
                f"hold{'' if count > 1 else 's'} {held} in all, "
                "this one among them if it uses the GPU"
            )
    return "; ".join(rows)


def other_processes(findings: Findings) -> Verdict:
    """Memory other processes hold on the visible GPUs: often a forgotten kernel."""
    nvml = findings.nvml
    if nvml.problem is not None:
        return Verdict(Status.UNKNOWN, nvml.problem)
    if not nvml.visible_gpus():
        return Verdict(Status.UNKNOWN, "no visible GPU")
    every = _held_text(findings, 0.0)
    much = _held_text(findings, SHARED_FRACTION)
    if not every and (unattributed := _unattributed_text(findings)):
        return Verdict(
            Status.UNKNOWN,
            "NVML lists GPU processes by the host's process IDs, which a container cannot tell "
            f"from its own: {unattributed}",
        )
    if not much:
        found = (
            "no other process holds much GPU memory" if every else "no other process uses the GPUs"
        )
        return Verdict(Status.OK, found, (every,) if every else ())
    return Verdict(
        Status.WARNING,
        f"other processes hold GPU memory: {much}",
        (f"all of them: {every}",) if every != much else (),
        findings.remedies("stale_process", other_processes=much),
    )
