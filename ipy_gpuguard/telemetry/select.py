"""Choosing the telemetry source: NVML when it starts and sees a GPU, else simulated when asked,
else none, with the reason in one line."""

from __future__ import annotations

from collections.abc import Callable

from .backend import DeviceBackend, NoTelemetry
from .model import TelemetryUnavailable
from .nvml import NvmlBackend
from .units import parse_size_list

SIMULATE_HINT = "GPUGUARD_SIMULATE=8GiB or %gpuguard simulate 8GiB shows a simulated device"


def open_backend(
    simulate: str, open_nvml: Callable[[], DeviceBackend] = NvmlBackend.open
) -> DeviceBackend:
    """Open the best telemetry source available.

    Parameters
    ----------
    simulate
        Sizes of simulated devices (``"8GiB"``, ``"8GiB,16GiB"``), or ``""`` for none. A real GPU
        wins over a simulated one: the simulation is for machines without one.
    open_nvml
        Opens NVML; raises :class:`TelemetryUnavailable` with the reason there is none.
    """
    try:
        return open_nvml()
    except TelemetryUnavailable as error:
        reason = str(error)
    if not simulate.strip():
        return NoTelemetry(f"no GPU telemetry: {reason} ({SIMULATE_HINT})")
    try:
        sizes = parse_size_list(simulate)
    except ValueError as error:
        return NoTelemetry(
            f"no GPU telemetry: {reason}; and simulated devices {simulate!r} were not started: "
            f"{error} (write it like 8GiB or 8GiB,16GiB)"
        )
    from .simulated import SimulatedBackend  # psutil: imported only when simulating

    return SimulatedBackend(sizes)
