"""Device telemetry from NVML, through nvidia-ml-py (the ``pynvml`` module).

Every NVML call goes through :meth:`NvmlBackend._call`, which turns ``NVMLError`` into ``None``:
a GPU that does not report its temperature shows n/a, never an error. Errors are recognised by
their NVML code (``error.value``), not by class, so any nvidia-ml-py version works. The library is
initialised once, under a lock, when a session first needs it, and device handles are fetched
once: fetching them on every tick is what made gpustat slow.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

from .model import DeviceInfo, DeviceReading, TelemetryUnavailable
from .visible_devices import PhysicalDevice, select_visible

log = logging.getLogger(__name__)

_INIT_FAILURES = {
    "NVML_ERROR_LIBRARY_NOT_FOUND": (
        "NVML library not found: no NVIDIA driver is installed here "
        "(libnvidia-ml.so.1 or nvml.dll is missing)"
    ),
    "NVML_ERROR_DRIVER_NOT_LOADED": (
        "the NVIDIA driver is installed but not loaded: check `nvidia-smi`; "
        "a reboot after installing the driver usually loads it"
    ),
    "NVML_ERROR_LIB_RM_VERSION_MISMATCH": (
        "the NVML library and the running kernel driver have different versions "
        "(the driver was updated without a reboot): reboot, or reload the nvidia kernel modules"
    ),
    "NVML_ERROR_NO_PERMISSION": "no permission to open the NVIDIA device files (/dev/nvidia*)",
}
#: The first PID namespace's inode, fixed by Linux (``PROC_PID_INIT_INO``): the driver lists
#: processes by their PIDs in it, whichever namespace asks.
FIRST_PID_NAMESPACE = "pid:[4026531836]"
GPU_IS_LOST = (
    "GPU is lost: it stopped answering the driver (fell off the bus, overheated or lost power); "
    "it needs a reset or a reboot"
)


class NvmlBackend:
    """The GPUs the framework sees, read through NVML."""

    kind = "nvml"

    def __init__(
        self,
        nvml: ModuleType,
        visible: list[PhysicalDevice],
        driver: str | None,
        own_pid: int | None,
    ) -> None:
        self._nvml = nvml
        self._own_pid = own_pid
        self._lock = threading.Lock()
        self._closed = False
        self._reported: set[tuple[str, int | None]] = set()
        self._lost: set[int] = set()
        self._handles: list[Any] = [self._handle(device) for device in visible]
        self._devices = tuple(
            DeviceInfo(
                index=index,
                name=as_text(self._call("nvmlDeviceGetName", handle)) or "NVIDIA GPU",
                total_bytes=getattr(self._call("nvmlDeviceGetMemoryInfo", handle), "total", None),
                uuid=device.uuid,
            )
            for index, (device, handle) in enumerate(zip(visible, self._handles, strict=True))
        )
        self.summary = f"NVML, driver {driver}" if driver else "NVML"

    @classmethod
    def open(
        cls,
        nvml: ModuleType | None = None,
        cuda_visible_devices: str | None = None,
        own_pid: Callable[[], int | None] | None = None,
    ) -> NvmlBackend:
        """Initialise NVML and find the visible GPUs.

        Parameters
        ----------
        nvml
            The ``pynvml`` module; tests pass a fake one. Imported here, not at extension load.
        cuda_visible_devices
            Defaults to the process's ``CUDA_VISIBLE_DEVICES``.
        own_pid
            This process's PID as NVML lists it (:func:`listed_pid`); tests pass another.

        Raises
        ------
        TelemetryUnavailable
            With the reason in words: no library, driver not loaded, version mismatch, no GPU.
        """
        if nvml is None:
            nvml = import_pynvml()
        if cuda_visible_devices is None:
            cuda_visible_devices = os.environ.get("CUDA_VISIBLE_DEVICES")
        try:
            nvml.nvmlInit()
        except nvml.NVMLError as error:
            raise TelemetryUnavailable(explain_init_failure(nvml, error)) from None
        try:
            gpus, migs = enumerate_devices(nvml)
        except nvml.NVMLError as error:
            nvml.nvmlShutdown()
            raise TelemetryUnavailable(f"NVML could not list the GPUs: {error}") from None
        visible = select_visible(gpus, migs, cuda_visible_devices)
        if not visible:
            nvml.nvmlShutdown()
            if not gpus:
                raise TelemetryUnavailable("NVML sees no NVIDIA GPU on this machine")
            raise TelemetryUnavailable(
                f"CUDA_VISIBLE_DEVICES={cuda_visible_devices!r} hides all {len(gpus)} GPU(s)"
            )
        driver = as_text(quietly(nvml, nvml.nvmlSystemGetDriverVersion))
        return cls(nvml, visible, driver, (own_pid or listed_pid)())

    def devices(self) -> tuple[DeviceInfo, ...]:
        return self._devices

    def read(self, index: int) -> DeviceReading:
        if index in self._lost:
            return DeviceReading(problem=GPU_IS_LOST)
        handle = self._handles[index]
        memory, memory_failure = self._attempt("nvmlDeviceGetMemoryInfo", handle, device=index)
        utilization = self._call("nvmlDeviceGetUtilizationRates", handle, device=index)
        power_mw = self._call("nvmlDeviceGetPowerUsage", handle, device=index)
        temperature = self._call(
            "nvmlDeviceGetTemperature", handle, self._nvml.NVML_TEMPERATURE_GPU, device=index
        )
        used = getattr(memory, "used", None)
        missing = None
        if not isinstance(used, int):
            used = None
            missing = f"NVML could not read its memory ({memory_failure or 'no figures given'})"
        power_mw = _number(power_mw)
        return DeviceReading(
            used_bytes=used,
            total_bytes=_number(getattr(memory, "total", None)),
            utilization_percent=_number(getattr(utilization, "gpu", None)),
            temperature_c=_number(temperature),
            power_watts=None if power_mw is None else power_mw / 1000,
            problem=GPU_IS_LOST if index in self._lost else None,
            memory_missing=missing,
        )

    def other_processes(self, index: int) -> tuple[tuple[int, int], ...]:
        """Compute and graphics processes other than this one, with the memory each holds."""
        if index in self._lost:
            return ()
        return memory_held_by_others(self._process_lists(index), self._own_pid)

    def bytes_held_by_others(self, index: int) -> int | None:
        """What the other processes hold on a device; ``None`` where NVML does not list this
        process (its PIDs are another namespace's, as in a container, so any one may be this
        very process) or cannot say."""
        if index in self._lost:
            return None
        return total_held_by_others(self._process_lists(index), self._own_pid)

    def _process_lists(self, index: int) -> list[Any]:
        return [
            self._call(function, self._handles[index], device=index) or ()
            for function in PROCESS_LISTS
        ]

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                quietly(self._nvml, self._nvml.nvmlShutdown)

    def _handle(self, device: PhysicalDevice) -> Any:
        handle = self._call("nvmlDeviceGetHandleByIndex", device.nvml_index)
        if device.mig_index is None:
            return handle
        return self._call("nvmlDeviceGetMigDeviceHandleByIndex", handle, device.mig_index)

    def _call(self, function: str, *args: Any, device: int | None = None) -> Any:
        """The result of an NVML call, or ``None`` when NVML cannot say (see :meth:`_attempt`)."""
        return self._attempt(function, *args, device=device)[0]

    def _attempt(
        self, function: str, *args: Any, device: int | None = None
    ) -> tuple[Any, str | None]:
        """The one choke point: the result, or ``None`` and why.

        ``device`` names the visible device the call is about, so that ``GPU is lost`` marks it.
        Any error is this reading's alone: an ``OSError`` from the bindings, or a function an old
        nvidia-ml-py lacks, leaves every other reading and the next sample as they are.
        """
        with self._lock:
            if self._closed:
                return None, "NVML is shut down"
            try:
                return getattr(self._nvml, function)(*args), None
            except self._nvml.NVMLError as error:
                self._note_failure(function, error, device)
                return None, str(error)
            except Exception as error:
                self._note_failure(function, error, device)
                return None, f"{type(error).__name__}: {error}"

    def _note_failure(self, function: str, error: Exception, device: int | None) -> None:
        code = getattr(error, "value", None)
        if code == self._nvml.NVML_ERROR_NOT_SUPPORTED:
            return  # an ordinary "n/a": many GPUs report no power or temperature
        if code == self._nvml.NVML_ERROR_GPU_IS_LOST and device is not None:
            self._lost.add(device)
        if (function, code) not in self._reported:
            self._reported.add((function, code))
            log.info("NVML %s failed: %s", function, error)


def _number(value: Any) -> Any:
    """``value`` when it is a number, else ``None``: bindings that hand back a string or an
    object for one figure leave that figure unknown, and every other as read."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def import_pynvml() -> ModuleType:
    try:
        import pynvml
    except ImportError:
        raise TelemetryUnavailable(
            "nvidia-ml-py is not installed (it provides the pynvml module): pip install nvidia-ml-py"
        ) from None
    module: ModuleType = pynvml
    return module


def explain_init_failure(nvml: ModuleType, error: Exception) -> str:
    code = getattr(error, "value", None)
    for constant, explanation in _INIT_FAILURES.items():
        if code == getattr(nvml, constant, object()):
            return explanation
    return f"NVML failed to start: {error}"


def enumerate_devices(nvml: ModuleType) -> tuple[list[PhysicalDevice], list[PhysicalDevice]]:
    """Whole GPUs in NVML order, and the MIG instances of those with MIG enabled."""
    gpus: list[PhysicalDevice] = []
    migs: list[PhysicalDevice] = []
    for index in range(nvml.nvmlDeviceGetCount()):
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        uuid = as_text(nvml.nvmlDeviceGetUUID(handle))
        gpus.append(PhysicalDevice(nvml_index=index, uuid=uuid))
        migs.extend(_mig_instances(nvml, handle, index, uuid))
    return gpus, migs


def _mig_instances(
    nvml: ModuleType, handle: Any, index: int, parent_uuid: str
) -> list[PhysicalDevice]:
    mode = quietly(nvml, nvml.nvmlDeviceGetMigMode, handle)
    if mode is None or mode[0] != nvml.NVML_DEVICE_MIG_ENABLE:
        return []
    instances = []
    for slot in range(quietly(nvml, nvml.nvmlDeviceGetMaxMigDeviceCount, handle) or 0):
        mig = quietly(nvml, nvml.nvmlDeviceGetMigDeviceHandleByIndex, handle, slot)
        if mig is None:
            continue  # an empty slot answers NVML_ERROR_NOT_FOUND
        instances.append(
            PhysicalDevice(
                nvml_index=index,
                uuid=as_text(nvml.nvmlDeviceGetUUID(mig)),
                mig_index=slot,
                parent_uuid=parent_uuid,
                gpu_instance_id=quietly(nvml, nvml.nvmlDeviceGetGpuInstanceId, mig),
                compute_instance_id=quietly(nvml, nvml.nvmlDeviceGetComputeInstanceId, mig),
            )
        )
    return instances


#: NVML's process lists: compute (CUDA) and graphics processes are listed apart.
PROCESS_LISTS = ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses")


def listed_pid(read_namespace: Callable[[], str] | None = None) -> int | None:
    """This process's PID as NVML lists it; ``None`` where NVML cannot name it.

    The driver knows no PID namespaces: in a container (Docker, a Kubernetes pod) NVML lists
    every process, this one among them, by its PID on the host, which the container cannot
    learn. There no listed process can be told from this one. Outside Linux, and where the
    namespace cannot be read, NVML's PIDs are taken to be the ones this process knows.
    """
    if not sys.platform.startswith("linux"):
        return os.getpid()
    try:
        namespace = (read_namespace or _pid_namespace)()
    except OSError:
        return os.getpid()
    return os.getpid() if namespace == FIRST_PID_NAMESPACE else None


def _pid_namespace() -> str:
    return os.readlink("/proc/self/ns/pid")


def memory_held_by_others(
    process_lists: Iterable[Iterable[Any]], own_pid: int | None
) -> tuple[tuple[int, int], ...]:
    """``(pid, used_bytes)`` of each process but ``own_pid``, a process in both lists once;
    none where ``own_pid`` is ``None`` (see :func:`listed_pid`): any of them may be this one.

    NVML reports ``usedGpuMemory`` as ``None`` where it cannot tell (Windows under WDDM);
    such processes are left out.
    """
    if own_pid is None:
        return ()
    return tuple((pid, used) for pid, used in listed_processes(process_lists) if pid != own_pid)


def listed_processes(process_lists: Iterable[Iterable[Any]]) -> tuple[tuple[int, int], ...]:
    """``(pid, used_bytes)`` of every listed process whose memory NVML tells, by PID."""
    return tuple(
        (pid, used) for pid, used in sorted(_listed(process_lists).items()) if used is not None
    )


def total_held_by_others(process_lists: Iterable[Iterable[Any]], own_pid: int | None) -> int | None:
    """The bytes every process but ``own_pid`` holds, where NVML lists ``own_pid`` too.

    Where NVML cannot name this process (``own_pid`` is ``None``: a container), where it lists
    it under a number that is not ``own_pid``, and wherever it lists no process at all, the
    memory of others cannot be told from this process's own, and ``None`` says so. A process
    whose memory NVML cannot tell (WDDM) counts as holding none.
    """
    listed = _listed(process_lists)
    if own_pid is None or own_pid not in listed:
        return None
    return sum(used or 0 for pid, used in listed.items() if pid != own_pid)


def _listed(process_lists: Iterable[Iterable[Any]]) -> dict[int, int | None]:
    """Each listed PID's memory (the larger where a process is in both lists; ``None`` where
    NVML gives no figure)."""
    listed: dict[int, int | None] = {}
    for processes in process_lists:
        for process in processes:
            used = getattr(process, "usedGpuMemory", None)
            pid = getattr(process, "pid", None)
            if not isinstance(pid, int):
                continue
            known = [size for size in (listed.get(pid), used) if isinstance(size, int)]
            listed[pid] = max(known) if known else None
    return listed


def quietly(nvml: ModuleType, function: Any, *args: Any) -> Any:
    """Call during set-up or shut-down, where a failure only means "not known"."""
    try:
        return function(*args)
    except nvml.NVMLError:
        return None


def as_text(value: Any) -> str:
    """nvidia-ml-py returned ``bytes`` before version 11.5 and ``str`` since."""
    if value is None:
        return ""
    return value.decode() if isinstance(value, bytes) else str(value)
