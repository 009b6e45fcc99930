"""GPU telemetry: device readings (NVML or simulated), framework allocator readings, the sampler.

Imports neither IPython, ipywidgets nor a framework, so it is tested without a shell or a GPU.
"""

from .backend import DeviceBackend, NoTelemetry
from .framework import FrameworkAllocators
from .model import (
    AllocatorReading,
    DeviceInfo,
    DeviceReading,
    DeviceSample,
    Sample,
    TelemetryUnavailable,
)
from .sampler import DevicePeak, SampleHistory, Sampler
from .select import open_backend

__all__ = [
    "AllocatorReading",
    "DeviceBackend",
    "DeviceInfo",
    "DevicePeak",
    "DeviceReading",
    "DeviceSample",
    "FrameworkAllocators",
    "NoTelemetry",
    "Sample",
    "SampleHistory",
    "Sampler",
    "TelemetryUnavailable",
    "open_backend",
]
