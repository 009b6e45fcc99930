"""Why a kernel died, from what it last recorded: the lab extension's post-mortem.

A kernel that the OS kills (out of host memory) or that a Windows GPU reset aborts (TDR,
DirectML) cannot say why itself. Its state file, written at most a second before, holds the
evidence: the machine's free memory, the platform, the last diagnosis, how long the last step had
been running.
"""

from __future__ import annotations

from typing import NamedTuple

from ..protocol import KernelState, PostMortem


class Cause(NamedTuple):
    title: str
    why: str  # a template: the facts of the record fill it in
    remedies: tuple[str, ...]


#: Below this share of the machine's memory available at the last sample, the OS's
#: out-of-memory killer is the likely end (the last sample is up to a second old).
HOST_MEMORY_LOW = 0.10
#: Windows resets a GPU whose work has not answered for 2 s (TDR's default delay).
TDR_DELAY_S = 2.0

_HOST_MEMORY = Cause(
    "Out of host memory: the OS killed the kernel",
    "The machine had {available} of memory left at the kernel's last record: the operating "
    "system's out-of-memory killer ends the largest process, with no error to show.",
    (
        "Load the data in batches (tf.data, a generator, keras.utils.PyDataset) instead of whole "
        "NumPy arrays.",
        "Free what earlier cells keep (del big arrays, models; gc.collect()) before training.",
        "Lower the batch size or the shuffle/prefetch buffers: each holds batches in host memory.",
    ),
)
_GPU_TIMEOUT = Cause(
    "The GPU stopped answering and Windows reset it",
    "A GPU operation ran longer than Windows allows (TDR, {delay:g} s by default); the driver "
    "reset the device and DirectML/TensorFlow aborted the process.",
    (
        "Lower the batch size, or split the work into smaller steps, so that no single GPU "
        "operation runs that long.",
        "Raise TdrDelay under HKLM\\System\\CurrentControlSet\\Control\\GraphicsDrivers "
        "(a reboot applies it) on a machine that only computes.",
        "Update the GPU driver: some resets are driver faults fixed since.",
    ),
)
_GPU_FAULT = Cause(
    "The GPU reported a fault",
    "The kernel last recorded {rule}; the process died with the device in that state.",
    (
        "Look at the driver's log (nvidia-smi -q, dmesg for Xid errors) for the fault.",
        "Rerun with CUDA_LAUNCH_BLOCKING=1 to find the operation that faulted.",
        "If it repeats on code that ran before, check the card's temperature and power.",
    ),
)
_UNKNOWN = Cause(
    "The kernel died without an error",
    "The process ended without a Python exception: a crash in native code (a driver, a "
    "library), os._exit, or a signal from outside.",
    (
        "Run the cell again with the guard: the state it records may tell more.",
        "Look at the server's log: the kernel's last lines of output go there.",
    ),
)


def post_mortem(state: KernelState) -> PostMortem:
    """The likely cause of a kernel's death, with what to do about it."""
    rule = state.last_rule_id or ""
    if _host_memory_ran_out(state):
        available = _gib(state.host_available_bytes or 0)
        return _found(state, "host_memory", _HOST_MEMORY, available=available)
    if rule.startswith("hang.directml") or _step_outran_tdr(state):
        return _found(state, "gpu_timeout", _GPU_TIMEOUT, delay=TDR_DELAY_S)
    if rule.startswith("fault."):
        return _found(state, "gpu_fault", _GPU_FAULT, rule=rule)
    return _found(state, "unknown", _UNKNOWN)


def _found(state: KernelState, cause: str, found: Cause, **facts: object) -> PostMortem:
    return PostMortem(state, cause, found.title, found.why.format(**facts), found.remedies)


def _host_memory_ran_out(state: KernelState) -> bool:
    available, total = state.host_available_bytes, state.host_total_bytes
    if available is None or not total:
        return False
    return available < HOST_MEMORY_LOW * total


def _step_outran_tdr(state: KernelState) -> bool:
    """On Windows, a cell that was running with its last step older than TDR's delay."""
    return (
        state.platform == "win32"
        and state.running
        and state.last_step_at is not None
        and state.updated_at - state.last_step_at > TDR_DELAY_S
    )


def _gib(size: int) -> str:
    return f"{size / 2**30:.1f} GiB"
