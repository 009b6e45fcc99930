"""A fake ``pynvml`` module for machines without an NVIDIA driver.

Its functions are fakes, but its ``NVMLError`` classes and ``NVML_*`` constants are nvidia-ml-py's
own, so errors have exactly the shape the real library raises (``NVMLError(code)`` builds the
``NVMLError_<Name>`` subclass and carries ``.value``).
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field

import pynvml


@dataclass
class FakeGpu:
    name: str = "NVIDIA A100-SXM4-80GB"
    uuid: str = "GPU-00000000-0000-0000-0000-000000000000"
    total_bytes: int = 80 * 1024**3
    used_bytes: int = 1 * 1024**3
    utilization_percent: int = 37
    temperature_c: int = 54
    power_mw: int = 212_000
    unsupported: set[str] = field(default_factory=set)
    lost: bool = False
    migs: list[FakeGpu] | None = None
    gpu_instance_id: int = 0
    compute_instance_id: int = 0
    processes: list[tuple[int, int | None]] = field(default_factory=list)
    graphics_processes: list[tuple[int, int | None]] = field(default_factory=list)
    driver_model: int | None = None  # Windows only: NVML answers NOT_SUPPORTED elsewhere
    display_active: bool = False


def fail(code: int) -> pynvml.NVMLError:
    return pynvml.NVMLError(code)


def make_fake_nvml(
    gpus: list[FakeGpu],
    init_error: int | None = None,
    driver: str = "550.54.15",
    cuda_driver: int = 12040,
) -> types.ModuleType:
    """A module with the subset of the pynvml API that ipy_gpuguard calls.

    ``driver`` and ``cuda_driver`` are what NVML reports of the driver: its version, and the
    newest CUDA it runs as ``nvmlSystemGetCudaDriverVersion`` writes it (12040 is 12.4).
    """
    nvml = types.ModuleType("pynvml")
    for name in dir(pynvml):
        if name.startswith(("NVML_", "NVMLError")):
            setattr(nvml, name, getattr(pynvml, name))
    nvml.calls = []
    nvml.initialised = False

    def device_call(function_name, handle):
        nvml.calls.append(function_name)
        if handle.lost:
            raise fail(pynvml.NVML_ERROR_GPU_IS_LOST)
        if function_name in handle.unsupported:
            raise fail(pynvml.NVML_ERROR_NOT_SUPPORTED)

    def nvmlInit():
        if init_error is not None:
            raise fail(init_error)
        nvml.initialised = True

    def nvmlShutdown():
        nvml.initialised = False

    def nvmlDeviceGetHandleByIndex(index):
        nvml.calls.append("nvmlDeviceGetHandleByIndex")
        if index >= len(gpus):
            raise fail(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return gpus[index]

    def nvmlDeviceGetMemoryInfo(handle):
        device_call("nvmlDeviceGetMemoryInfo", handle)
        return types.SimpleNamespace(
            total=handle.total_bytes,
            used=handle.used_bytes,
            free=handle.total_bytes - handle.used_bytes,
        )

    def nvmlDeviceGetUtilizationRates(handle):
        device_call("nvmlDeviceGetUtilizationRates", handle)
        return types.SimpleNamespace(gpu=handle.utilization_percent, memory=10)

    def nvmlDeviceGetTemperature(handle, sensor):
        device_call("nvmlDeviceGetTemperature", handle)
        assert sensor == pynvml.NVML_TEMPERATURE_GPU
        return handle.temperature_c

    def nvmlDeviceGetPowerUsage(handle):
        device_call("nvmlDeviceGetPowerUsage", handle)
        return handle.power_mw

    def nvmlDeviceGetName(handle):
        device_call("nvmlDeviceGetName", handle)
        return handle.name

    def nvmlDeviceGetUUID(handle):
        return handle.uuid

    def nvmlDeviceGetMigMode(handle):
        if handle.migs is None:
            raise fail(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return [pynvml.NVML_DEVICE_MIG_ENABLE, pynvml.NVML_DEVICE_MIG_ENABLE]

    def nvmlDeviceGetMaxMigDeviceCount(handle):
        return 7

    def nvmlDeviceGetMigDeviceHandleByIndex(handle, slot):
        if slot >= len(handle.migs):
            raise fail(pynvml.NVML_ERROR_NOT_FOUND)
        return handle.migs[slot]

    def nvmlDeviceGetGpuInstanceId(handle):
        return handle.gpu_instance_id

    def nvmlDeviceGetComputeInstanceId(handle):
        return handle.compute_instance_id

    def nvmlDeviceGetComputeRunningProcesses(handle):
        device_call("nvmlDeviceGetComputeRunningProcesses", handle)
        return [
            types.SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in handle.processes
        ]

    def nvmlDeviceGetGraphicsRunningProcesses(handle):
        device_call("nvmlDeviceGetGraphicsRunningProcesses", handle)
        return [
            types.SimpleNamespace(pid=pid, usedGpuMemory=used)
            for pid, used in handle.graphics_processes
        ]

    def nvmlDeviceGetHandleByUUID(uuid):
        return next(gpu for gpu in gpus if gpu.uuid == uuid)

    def nvmlDeviceGetDriverModel(handle):
        if handle.driver_model is None:
            raise fail(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return [handle.driver_model, handle.driver_model]

    def nvmlDeviceGetDisplayActive(handle):
        return int(handle.display_active)

    for function in (
        nvmlDeviceGetComputeRunningProcesses,
        nvmlDeviceGetGraphicsRunningProcesses,
        nvmlInit,
        nvmlShutdown,
        nvmlDeviceGetHandleByIndex,
        nvmlDeviceGetMemoryInfo,
        nvmlDeviceGetUtilizationRates,
        nvmlDeviceGetTemperature,
        nvmlDeviceGetPowerUsage,
        nvmlDeviceGetName,
        nvmlDeviceGetUUID,
        nvmlDeviceGetMigMode,
        nvmlDeviceGetMaxMigDeviceCount,
        nvmlDeviceGetMigDeviceHandleByIndex,
        nvmlDeviceGetGpuInstanceId,
        nvmlDeviceGetComputeInstanceId,
        nvmlDeviceGetHandleByUUID,
        nvmlDeviceGetDriverModel,
        nvmlDeviceGetDisplayActive,
    ):
        setattr(nvml, function.__name__, function)
    nvml.nvmlDeviceGetCount = lambda: len(gpus)
    nvml.nvmlSystemGetDriverVersion = lambda: driver
    nvml.nvmlSystemGetCudaDriverVersion = lambda: cuda_driver
    return nvml
