"""The interface every device telemetry source offers, and the source used when there is none."""

from __future__ import annotations

from typing import Protocol

from .model import DeviceInfo, DeviceReading


class DeviceBackend(Protocol):
    """A source of device readings: NVML, simulated devices, or nothing.

    Implementations never raise from :meth:`read`: an unknown value is ``None``, a device that
    stopped answering says so in ``DeviceReading`` terms, and the first failure of each kind is
    logged once.
    """

    @property
    def kind(self) -> str:
        """``"nvml"``, ``"simulated"`` or ``"none"``: shown in the panel and ``%gpuguard status``."""
        ...

    @property
    def summary(self) -> str:
        """One line for people: what this source is, or why there is no telemetry."""
        ...

    def devices(self) -> tuple[DeviceInfo, ...]:
        """The devices the framework sees, in the framework's order."""
        ...

    def read(self, index: int) -> DeviceReading:
        """Read one device now; called from the sampler thread."""
        ...

    def other_processes(self, index: int) -> tuple[tuple[int, int], ...]:
        """``(pid, used_bytes)`` of the other processes holding memory on a device."""
        ...

    def bytes_held_by_others(self, index: int) -> int | None:
        """What the other processes hold of a device's memory, which this process cannot have;
        ``None`` where they cannot be told from this process."""
        ...

    def close(self) -> None:
        """Release the library; later reads return unknown values."""
        ...


class NoTelemetry:
    """Stands in when no device can be read, carrying the reason for the panel's status line."""

    kind = "none"

    def __init__(self, reason: str) -> None:
        self.summary = reason

    def devices(self) -> tuple[DeviceInfo, ...]:
        return ()

    def read(self, index: int) -> DeviceReading:
        return DeviceReading()

    def other_processes(self, index: int) -> tuple[tuple[int, int], ...]:
        return ()

    def bytes_held_by_others(self, index: int) -> int | None:
        return None

    def close(self) -> None:
        pass
