"""What the guard knows beyond the error itself: the cell's native log, memory, settings.

Filled by the guard from its telemetry and the framework's state; ``diagnose`` outside a
guarded cell gets the installed TensorFlow version and the environment, nothing else.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import metadata

from ..watchdog import HangEvidence
from .model import Kind
from .stack import Framework

#: Environment variables that bear on GPU failures, the only ones a diagnosis (and so the
#: incident log) ever records.
ENVIRONMENT_ALLOW_LIST = (
    "CUDA_VISIBLE_DEVICES",
    "DML_VISIBLE_DEVICES",
    "TF_FORCE_GPU_ALLOW_GROWTH",
    "TF_GPU_ALLOCATOR",
    "TF_XLA_FLAGS",
    "XLA_FLAGS",
    "TF_ENABLE_ONEDNN_OPTS",
    "TF_CPP_MIN_LOG_LEVEL",
    "PYTORCH_CUDA_ALLOC_CONF",
    "XLA_PYTHON_CLIENT_PREALLOCATE",
    "XLA_PYTHON_CLIENT_MEM_FRACTION",
    "CUDA_LAUNCH_BLOCKING",
)
TENSORFLOW_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tf-nightly")


@dataclass(frozen=True)
class DeviceMemory:
    """One watched device during the failed cell: its capacity and the peaks before the failure.

    ``other_processes`` holds ``(pid, used_bytes)`` of other processes on the device;
    ``allocator_framework`` whose allocator ``peak_allocator_bytes`` is ("TensorFlow", "JAX",
    "PyTorch"), where the guard read one.
    """

    index: int
    name: str
    total_bytes: int | None
    peak_used_bytes: int | None = None
    peak_allocator_bytes: int | None = None
    other_processes: tuple[tuple[int, int], ...] = ()
    simulated: bool = False
    allocator_framework: str | None = None


@dataclass(frozen=True)
class Context:
    """Everything outside the exception that a diagnosis may use; all of it optional.

    Parameters
    ----------
    gpu_initialised
        Whether TensorFlow has initialised its GPUs in this process (memory settings then
        need a restart); ``None`` when unknown.
    previous_kind
        The kind of this session's previous failure: an illegal address right after an
        out-of-memory error is its consequence.
    hang
        What the watchdog saw of the cell: the last step times, a stall, where it was and what
        the GPUs did during it (the card words it).
    watchdog_interrupted
        The watchdog interrupted the cell (``--on-hang interrupt``): an interrupt that ends
        it is the watchdog's, not the person's.
    frameworks
        The frameworks imported in the kernel (:func:`.stack.stack_of_modules`): the stack of
        an error whose words name none.
    """

    log_lines: tuple[str, ...] = ()
    devices: tuple[DeviceMemory, ...] = ()
    previous_kind: Kind | None = None
    tensorflow_version: str | None = None
    gpu_initialised: bool | None = None
    memory_growth: bool | None = None
    xla: bool | None = None
    environment: Mapping[str, str] = field(default_factory=dict)
    hang: HangEvidence | None = None
    watchdog_interrupted: bool = False
    frameworks: frozenset[Framework] = frozenset()

    @classmethod
    def of_this_process(cls) -> Context:
        """The installed TensorFlow (from package metadata, not imported) and the environment."""
        return cls(
            tensorflow_version=installed_tensorflow(),
            environment=allowed_environment(os.environ),
        )


def installed_tensorflow() -> str | None:
    for distribution in TENSORFLOW_DISTRIBUTIONS:
        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            continue
    return None


def allowed_environment(environ: Mapping[str, str]) -> dict[str, str]:
    return {name: environ[name] for name in ENVIRONMENT_ALLOW_LIST if name in environ}
