"""Remedies for a stack: the catalog's spelling that fits it, its steps filled in.

Rules name remedies by id, most likely first; the doctor (``%gpuguard doctor``) uses the same
catalog (:mod:`.remedy_catalog`). A remedy with no spelling for the stack is left out: a card
shows only what the person's own framework and GPU can do.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import replace

from .builds import major_minor
from .facts import fill
from .model import FactValue, Remedy
from .remedy_catalog import CATALOG, SEE_DOCTOR
from .stack import UNKNOWN, Framework, Stack, Vendor

__all__ = ["REMEDIES", "SEE_DOCTOR", "STEP_TIMEOUT_REMEDIES", "remedy_for", "resolved"]

#: What to do when steps come near the GPU's own timeout (TDR), most effective first.
STEP_TIMEOUT_REMEDIES = ("smaller_work", "tcc_mode", "tdr_registry")


def _spellings() -> dict[str, tuple[Remedy, ...]]:
    spellings: dict[str, list[Remedy]] = defaultdict(list)
    for remedy in CATALOG:
        spellings[remedy.id].append(remedy)
    return {remedy_id: tuple(found) for remedy_id, found in spellings.items()}


#: Each remedy's spellings, the most particular first.
SPELLINGS = _spellings()
#: Each remedy as an unknown stack sees it (its last spelling): for lists of titles.
REMEDIES: dict[str, Remedy] = {remedy_id: found[-1] for remedy_id, found in SPELLINGS.items()}

#: Remedies about GPU memory settings and GPU sharing: left out when the failure was on the CPU.
GPU_ONLY_REMEDIES = frozenset(
    {"memory_growth", "cuda_malloc_async", "stale_process", "expandable_segments", "tcc_mode"}
)

#: Remedies that only work in a process where the framework has not yet set up the GPU.
NEEDS_FRESH_PROCESS = frozenset({"memory_growth", "cuda_malloc_async", "expandable_segments"})
RESTART_NOTE = "Needs a kernel restart: TensorFlow has already initialised the GPU in this kernel."


def remedy_for(remedy_id: str, stack: Stack) -> Remedy | None:
    """The spelling of the remedy that fits the stack best; ``None`` when none fits.

    The frameworks are tried in the stack's order (:meth:`.Stack.in_order`), then a spelling
    that names none. A spelling for some vendors fits their GPUs; for a GPU the error does not
    name, a spelling for every GPU comes first, then NVIDIA's, the GPU of most reports.
    """
    if stack.vendor is None:
        spellings = [remedy for remedy in SPELLINGS[remedy_id] if not remedy.vendors]
        spellings += [r for r in SPELLINGS[remedy_id] if Vendor.NVIDIA in r.vendors]
    else:
        spellings = [
            remedy
            for remedy in SPELLINGS[remedy_id]
            if not remedy.vendors or stack.vendor in remedy.vendors
        ]
    for framework in stack.in_order():
        for remedy in spellings:
            if framework in remedy.frameworks:
                return remedy
    return next((remedy for remedy in spellings if not remedy.frameworks), None)


def resolved(
    remedy_id: str,
    fields: Mapping[str, FactValue],
    gpu_initialised: bool | None,
    stack: Stack = UNKNOWN,
) -> Remedy | None:
    """The remedy's spelling for ``stack`` with its steps filled from ``fields``; ``None``
    when the stack has no spelling of it.

    A remedy that needs a fresh process gets a note: a restart when TensorFlow has initialised
    the GPU here (``gpu_initialised``), a reminder when that is unknown or another framework's.
    """
    remedy = remedy_for(for_this_stack(remedy_id, fields, stack), stack)
    if remedy is None:
        return None
    fields = {**stack_fields(stack), **fields}
    note = remedy.note
    tensorflow = Framework.TENSORFLOW in remedy.frameworks
    if remedy_id in NEEDS_FRESH_PROCESS and (gpu_initialised is not False or not tensorflow):
        note = (
            RESTART_NOTE
            if gpu_initialised and tensorflow
            else f"Takes effect only in a fresh kernel, before {_started_by(remedy, stack)}."
        )
    return replace(
        remedy,
        title=fill(remedy.title, fields),
        steps=tuple(fill(step, fields) for step in remedy.steps),
        note=note,
    )


def _started_by(remedy: Remedy, stack: Stack) -> str:
    frameworks = remedy.frameworks & stack.frameworks
    name = next(iter(frameworks)).display_name if len(frameworks) == 1 else "the framework"
    return f"{name} starts using the GPU"


_UPGRADES = {
    Framework.TENSORFLOW: "pip install --upgrade tensorflow.",
    Framework.PYTORCH: "pip install --upgrade torch (the wheel for your GPU from pytorch.org).",
    Framework.JAX: "pip install --upgrade jax jaxlib and the GPU plugin at the same version.",
    Framework.MLX: "pip install --upgrade mlx.",
    Framework.KERAS: "pip install --upgrade keras and its backend.",
}


def stack_fields(stack: Stack) -> dict[str, FactValue]:
    """Values remedies' steps may name about the stack: the framework, its device's name."""
    raised_by = stack.raised_by
    apple = stack.vendor is Vendor.APPLE
    upgrade = (
        _UPGRADES[raised_by] if raised_by is not None else "Upgrade the framework you train with."
    )
    if raised_by is Framework.TENSORFLOW and stack.vendor is Vendor.DIRECTML:
        upgrade = "pip install --upgrade tensorflow-directml-plugin (keep tensorflow-cpu 2.10)."
    return {
        "upgrade_framework": upgrade,
        "torch_device": "mps" if apple else "cuda",
        "torch_available": "torch.backends.mps.is_available()"
        if apple
        else "torch.cuda.is_available()",
    }


#: Remedies whose steps install ``tensorflow[and-cuda]``, an extra TensorFlow has from 2.14 on,
#: and what to advise instead for an older release.
_BEFORE_AND_CUDA = {
    "install_gpu_tensorflow": "install_gpu_tensorflow_before_2_14",
    "install_matching_libraries": "install_matching_libraries_before_2_14",
}
AND_CUDA_SINCE = (2, 14)


def for_this_stack(remedy_id: str, fields: Mapping[str, FactValue], stack: Stack = UNKNOWN) -> str:
    """The remedy that fits the installed TensorFlow: with tensorflow-directml-plugin
    (``directml_plugin``, or a DirectML error), never one that removes the tensorflow-cpu it
    runs on; before 2.14, never ``tensorflow[and-cuda]``, which does not exist there."""
    directml = "directml_plugin" in fields or stack.vendor is Vendor.DIRECTML
    if remedy_id == "install_gpu_tensorflow" and directml:
        return "keep_directml_tensorflow"
    version = fields.get("tensorflow_version")
    release = major_minor(version) if isinstance(version, str) else None
    if remedy_id in _BEFORE_AND_CUDA and release is not None and release < AND_CUDA_SINCE:
        return _BEFORE_AND_CUDA[remedy_id]
    return remedy_id
