"""A stand-in for the parts of ``pynvml`` the GPU-timeout probe reads, and a ctypes library."""

from __future__ import annotations

import ctypes
import types

NVML_DRIVER_WDDM, NVML_DRIVER_TCC = 0, 1


class FakeNvmlError(Exception):
    def __init__(self, value: int = 3) -> None:
        super().__init__(f"NVML error {value}")
        self.value = value


def fake_nvml(driver_model: int | None, display_active: bool) -> types.SimpleNamespace:
    """One GPU; ``driver_model`` ``None`` answers NOT_SUPPORTED, as NVML does off Windows."""

    def driver(handle: object) -> list[int]:
        if driver_model is None:
            raise FakeNvmlError(3)
        return [driver_model, driver_model]

    return types.SimpleNamespace(
        NVMLError=FakeNvmlError,
        nvmlInit=lambda: None,
        nvmlShutdown=lambda: None,
        nvmlDeviceGetHandleByIndex=lambda index: f"gpu{index}",
        nvmlDeviceGetHandleByUUID=lambda uuid: uuid,
        nvmlDeviceGetDriverModel=driver,
        nvmlDeviceGetDisplayActive=lambda handle: int(display_active),
    )


class FakeCudaRuntime:
    """``cudaDeviceGetAttribute`` answering ``timeout_enabled`` for attribute 17."""

    def __init__(self, timeout_enabled: bool, status: int = 0) -> None:
        self.timeout_enabled = timeout_enabled
        self.status = status
        self.asked: list[tuple[int, int]] = []

    def cudaDeviceGetAttribute(self, value: object, attribute: int, ordinal: int) -> int:  # noqa: N802
        self.asked.append((attribute, ordinal))
        ctypes.cast(value, ctypes.POINTER(ctypes.c_int)).contents.value = int(self.timeout_enabled)
        return self.status
