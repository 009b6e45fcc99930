"""The GPU's own watchdog: how long one piece of GPU work may run before the GPU is reset.

On Windows, a GPU under the WDDM driver model is reset when one piece of work runs past
``TdrDelay`` seconds (2 when the registry does not say otherwise) unless ``TdrLevel`` is 0;
under TCC or MCDM the display watchdog does not apply. On Linux, a GPU that drives an X display
has a run-time limit on kernels too, which CUDA reports as ``cudaDevAttrKernelExecTimeout``.
Everything is read, never changed, behind :class:`SystemTimeoutProbe`, whose inputs (platform,
registry, NVML, CUDA library) tests replace.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol

from ..telemetry import DeviceInfo
from ..telemetry.nvml_display import DisplayFacts, read_displays

TDR_KEY = r"System\CurrentControlSet\Control\GraphicsDrivers"
#: Windows' defaults when the registry has no value: 2 seconds, and recovery on.
DEFAULT_TDR_DELAY_S = 2.0
DEFAULT_TDR_LEVEL = 3
#: The display server sets the length of Linux's limit and CUDA does not report it: assume
#: Windows' default, the shortest in common use.
ASSUMED_LIMIT_S = 2.0
#: ``cudaDevAttrKernelExecTimeout``, the same number in the driver API.
KERNEL_EXEC_TIMEOUT = 17
_CUDA_LIBRARIES = {
    "win32": ("cudart64_12.dll", "cudart64_110.dll", "nvcuda.dll"),
    "linux": ("libcudart.so", "libcudart.so.12", "libcudart.so.11.0", "libcuda.so.1"),
}


@dataclass(frozen=True)
class GpuTimeout:
    """One GPU's watchdog.

    Parameters
    ----------
    active
        ``True``: the GPU is reset after ``limit_s``; ``False``: no such limit; ``None``: could
        not check, and ``reason`` says why.
    """

    index: int
    active: bool | None
    limit_s: float | None
    reason: str

    @property
    def text(self) -> str:
        """``GPU 0 · watchdog on: Windows resets this WDDM GPU ...``."""
        state = {True: "on", False: "off", None: "could not check"}[self.active]
        return f"GPU {self.index} · watchdog {state}: {self.reason}"


class TimeoutProbe(Protocol):
    """Reads the watchdog of each device; the guard's tests replace it."""

    def timeouts(self, devices: tuple[DeviceInfo, ...]) -> tuple[GpuTimeout, ...]: ...


class SystemTimeoutProbe:
    """The watchdog of this machine's GPUs, from the registry, NVML and CUDA.

    Parameters
    ----------
    platform
        ``sys.platform``.
    read_registry
        ``TdrDelay`` and ``TdrLevel`` as found (absent when not set); Windows only.
    nvml
        The ``pynvml`` module, or ``None`` to import it (it may be missing).
    load_library
        Loads a shared library by name (``ctypes.CDLL``), for the CUDA attribute.
    """

    def __init__(
        self,
        platform: str = sys.platform,
        read_registry: Callable[[], Mapping[str, int]] | None = None,
        nvml: ModuleType | None = None,
        load_library: Callable[[str], Any] = ctypes.CDLL,
    ) -> None:
        self._platform = platform
        self._read_registry = read_registry or read_tdr_registry
        self._nvml = nvml
        self._load_library = load_library

    def timeouts(self, devices: tuple[DeviceInfo, ...]) -> tuple[GpuTimeout, ...]:
        displays = read_displays(devices, self._nvml)
        if self._platform == "win32":
            tdr = self._read_registry()
            return tuple(
                _windows_timeout(info.index, tdr, displays.get(info.index, DisplayFacts()))
                for info in devices
            )
        attribute = CudaAttribute(self._load_library, _CUDA_LIBRARIES.get(self._platform, ()))
        return tuple(
            _cuda_timeout(info.index, attribute, displays.get(info.index, DisplayFacts()))
            for info in devices
        )


def _windows_timeout(index: int, tdr: Mapping[str, int], display: DisplayFacts) -> GpuTimeout:
    model = display.driver_model
    if model in ("TCC", "MCDM"):
        return GpuTimeout(index, False, None, f"{model} driver model: Windows' TDR does not apply")
    delay = float(tdr.get("TdrDelay", DEFAULT_TDR_DELAY_S))
    if tdr.get("TdrLevel", DEFAULT_TDR_LEVEL) == 0:
        return GpuTimeout(
            index, False, None, "TdrLevel 0: Windows never resets the GPU (a real hang freezes it)"
        )
    drives = " and drives a display" if display.display_active else ""
    source = "TdrDelay" if "TdrDelay" in tdr else "TdrDelay not set, Windows' default"
    return GpuTimeout(
        index,
        True,
        delay,
        f"Windows resets this {model or 'WDDM'} GPU{drives} when one piece of work runs "
        f"past {delay:g} s ({source})",
    )


def _cuda_timeout(index: int, attribute: CudaAttribute, display: DisplayFacts) -> GpuTimeout:
    enabled, problem = attribute.kernel_exec_timeout(index)
    if enabled is None:
        return GpuTimeout(index, None, None, problem)
    if not enabled:
        return GpuTimeout(index, False, None, "CUDA reports no run-time limit on kernels")
    drives = "it drives a display" if display.display_active else "it likely drives a display"
    return GpuTimeout(
        index,
        True,
        ASSUMED_LIMIT_S,
        f"CUDA reports a run-time limit on kernels ({drives}); its length is the display "
        f"server's, {ASSUMED_LIMIT_S:g} s assumed",
    )


class CudaAttribute:
    """``cudaDevAttrKernelExecTimeout`` through ctypes: the CUDA runtime, else the driver API.

    Reading an attribute initialises the driver but creates no context, so it takes no GPU
    memory and leaves the framework's later set-up as it would have been.
    """

    def __init__(self, load_library: Callable[[str], Any], names: tuple[str, ...]) -> None:
        self._load_library = load_library
        self._names = names

    def kernel_exec_timeout(self, ordinal: int) -> tuple[bool | None, str]:
        """Whether kernels on device ``ordinal`` have a run-time limit, or why it is unknown."""
        for name in self._names:
            try:
                library = self._load_library(name)
            except OSError:
                continue
            value = ctypes.c_int()
            if hasattr(library, "cudaDeviceGetAttribute"):
                status = library.cudaDeviceGetAttribute(
                    ctypes.byref(value), KERNEL_EXEC_TIMEOUT, ordinal
                )
            else:
                status = _driver_attribute(library, value, ordinal)
            if status != 0:
                return None, f"{name} answered error {status}"
            return bool(value.value), ""
        if not self._names:
            return None, "no CUDA library is known on this platform"
        return None, "no CUDA library could be loaded"


def _driver_attribute(library: Any, value: ctypes.c_int, ordinal: int) -> int:
    device = ctypes.c_int()
    status: int = library.cuInit(0) or library.cuDeviceGet(ctypes.byref(device), ordinal)
    if status:
        return status
    result: int = library.cuDeviceGetAttribute(ctypes.byref(value), KERNEL_EXEC_TIMEOUT, device)
    return result


def read_tdr_registry() -> dict[str, int]:
    """``TdrDelay`` and ``TdrLevel`` from the Windows registry, where they are set."""
    import winreg

    registry: Any = winreg  # typed for the platform mypy runs on, which may not be Windows

    values: dict[str, int] = {}
    try:
        key = registry.OpenKey(registry.HKEY_LOCAL_MACHINE, TDR_KEY)
    except OSError:
        return values
    with key:
        for name in ("TdrDelay", "TdrLevel"):
            try:
                values[name] = int(registry.QueryValueEx(key, name)[0])
            except OSError:
                continue
    return values


def step_warning(step_s: float, timeouts: tuple[GpuTimeout, ...]) -> str | None:
    """``steps take 1.4 s; this GPU is reset after 2 s`` when a step takes over half a limit."""
    limits = [t for t in timeouts if t.active and t.limit_s is not None]
    if not limits:
        return None
    shortest = min(limits, key=lambda t: t.limit_s or 0.0)
    assert shortest.limit_s is not None
    if step_s <= shortest.limit_s / 2:
        return None
    return (
        f"steps take {step_s:.1f} s; this GPU is reset after {shortest.limit_s:g} s "
        f"(GPU {shortest.index}: {shortest.reason})"
    )
