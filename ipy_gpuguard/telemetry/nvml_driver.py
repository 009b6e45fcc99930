"""What the NVIDIA driver says, through NVML: its version, its CUDA, the GPUs and who uses them.

Read for the doctor, which wants every GPU on the machine, not only those that
``CUDA_VISIBLE_DEVICES`` leaves visible (a GPU hidden from the frameworks is a finding); here
in ``telemetry/``, which alone starts NVML.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

from .model import TelemetryUnavailable
from .nvml import (
    PROCESS_LISTS,
    as_text,
    enumerate_devices,
    explain_init_failure,
    listed_processes,
    memory_held_by_others,
    quietly,
)
from .visible_devices import select_visible


@dataclass(frozen=True)
class NvmlGpu:
    """One whole GPU as NVML numbers it, and the memory other processes hold on it.

    ``unattributed`` lists, where NVML cannot name this process (a container), every process
    NVML lists by the host's PID: this one may be any of them.
    """

    index: int
    name: str
    uuid: str
    total_bytes: int | None
    other_processes: tuple[tuple[int, int], ...] = ()
    unattributed: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class NvmlFacts:
    """The driver's view; ``problem`` says why there is none (no driver, not loaded, ...).

    ``visible`` lists the NVML indices of the GPUs a CUDA framework sees, in its order.
    """

    driver: str | None = None
    cuda: tuple[int, int] | None = None
    gpus: tuple[NvmlGpu, ...] = ()
    visible: tuple[int, ...] = ()
    problem: str | None = None

    @property
    def cuda_text(self) -> str:
        return "" if self.cuda is None else f"{self.cuda[0]}.{self.cuda[1]}"

    def visible_gpus(self) -> tuple[NvmlGpu, ...]:
        return tuple(self.gpus[index] for index in self.visible)


def read_nvml(
    open_nvml: Callable[[], ModuleType], cuda_visible_devices: str | None, own_pid: int | None
) -> NvmlFacts:
    """Read the driver once and shut NVML down again; never raises for a missing driver."""
    try:
        nvml = open_nvml()
    except TelemetryUnavailable as error:
        return NvmlFacts(problem=str(error))
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as error:
        return NvmlFacts(problem=explain_init_failure(nvml, error))
    try:
        return _read(nvml, cuda_visible_devices, own_pid)
    except nvml.NVMLError as error:
        return NvmlFacts(problem=f"NVML could not list the GPUs: {error}")
    finally:
        quietly(nvml, nvml.nvmlShutdown)


def _read(nvml: ModuleType, cuda_visible_devices: str | None, own_pid: int | None) -> NvmlFacts:
    whole, migs = enumerate_devices(nvml)
    visible = select_visible(whole, migs, cuda_visible_devices)
    gpus = []
    for device in whole:
        handle = nvml.nvmlDeviceGetHandleByIndex(device.nvml_index)
        memory = quietly(nvml, nvml.nvmlDeviceGetMemoryInfo, handle)
        lists = [quietly(nvml, getattr(nvml, function), handle) or () for function in PROCESS_LISTS]
        gpus.append(
            NvmlGpu(
                index=device.nvml_index,
                name=as_text(quietly(nvml, nvml.nvmlDeviceGetName, handle)) or "NVIDIA GPU",
                uuid=device.uuid,
                total_bytes=getattr(memory, "total", None),
                other_processes=memory_held_by_others(lists, own_pid),
                unattributed=listed_processes(lists) if own_pid is None else (),
            )
        )
    cuda = quietly(nvml, nvml.nvmlSystemGetCudaDriverVersion)
    return NvmlFacts(
        driver=as_text(quietly(nvml, nvml.nvmlSystemGetDriverVersion)) or None,
        cuda=None if not cuda else (cuda // 1000, cuda % 1000 // 10),
        gpus=tuple(gpus),
        visible=tuple(dict.fromkeys(device.nvml_index for device in visible)),
    )
