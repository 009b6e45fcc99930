"""The values that telemetry produces: small frozen dataclasses, bytes as ``int``, ``None`` for unknown.

They cross every room of the package (sampler, panel, later the diagnosis), so they carry facts
only: never an exception, a handle or a framework object.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DeviceInfo:
    """A GPU as the framework sees it.

    ``index`` is the framework's index (``GPU:0`` is the first device left visible by
    ``CUDA_VISIBLE_DEVICES``), which is what the person passes to ``--devices``.
    """

    index: int
    name: str
    total_bytes: int | None
    uuid: str | None = None
    simulated: bool = False


@dataclass(frozen=True)
class DeviceReading:
    """What the device itself reports (NVML, or the simulation) at one moment.

    ``problem`` explains a device that stopped answering (``GPU is lost``), so that the panel
    says why its values are unknown; ``memory_missing`` says why ``used_bytes`` alone is.
    """

    used_bytes: int | None = None
    total_bytes: int | None = None
    utilization_percent: int | None = None
    temperature_c: int | None = None
    power_watts: float | None = None
    problem: str | None = None
    memory_missing: str | None = None


@dataclass(frozen=True)
class AllocatorReading:
    """What a framework's allocator holds on one device.

    ``peak_bytes`` is the allocator's own high-water mark since the cell started, so a short
    spike between two samples is still seen. ``peak_known`` is false where the allocator's mark
    cannot be started afresh (JAX's counts from the start of the process) and the cell has not
    passed the mark it found: then ``peak_bytes`` is only the bytes in use now, and a step's
    temporaries, which live for milliseconds, are missing from it.
    """

    framework: str
    current_bytes: int
    peak_bytes: int
    peak_known: bool = True


@dataclass(frozen=True)
class DeviceSample:
    """One device at one moment: the device view and, where a framework is in use, the allocator view."""

    index: int
    device: DeviceReading
    allocator: AllocatorReading | None = None


@dataclass(frozen=True)
class Sample:
    """Every watched device at one moment, ``elapsed_s`` after the guarded cell started."""

    elapsed_s: float
    devices: tuple[DeviceSample, ...]


class TelemetryUnavailable(Exception):
    """No device telemetry here; the message says why in words a person can act on."""
