"""Simulated GPUs for demos and tests on machines without one.

A simulated device is only useful if it moves with the real work, so device 0's "used" memory
follows the growth of this process's resident memory since the devices were created (the way a
framework's allocator holds on to what it took), and its utilisation follows the process's CPU
use. Every place that shows them says "simulated".
"""

from __future__ import annotations

from collections.abc import Callable

import psutil

from .model import DeviceInfo, DeviceReading
from .units import format_bytes

#: What a CUDA context costs on a real GPU before the first tensor: the floor of "used" (bytes).
CONTEXT_BYTES = 300 * 1024**2


class SimulatedBackend:
    """Devices of the given sizes whose readings follow this process."""

    kind = "simulated"

    def __init__(
        self,
        sizes_bytes: tuple[int, ...],
        rss_bytes: Callable[[], int] | None = None,
        cpu_percent: Callable[[], float] | None = None,
    ) -> None:
        process = psutil.Process()
        self._rss_bytes = rss_bytes or (lambda: int(process.memory_info().rss))
        self._cpu_percent = cpu_percent or (lambda: float(process.cpu_percent(interval=None)))
        self._baseline_bytes = self._rss_bytes()
        self._cpu_percent()  # the first psutil call only starts its measurement window
        self._devices = tuple(
            DeviceInfo(
                index=index,
                name=f"Simulated GPU ({format_bytes(size)})",
                total_bytes=size,
                simulated=True,
            )
            for index, size in enumerate(sizes_bytes)
        )
        sizes = ", ".join(format_bytes(size) for size in sizes_bytes)
        self.summary = f"simulated device(s): {sizes}; memory follows this process"

    def devices(self) -> tuple[DeviceInfo, ...]:
        return self._devices

    def read(self, index: int) -> DeviceReading:
        total = self._devices[index].total_bytes or 0
        if index == 0:
            growth = max(0, self._rss_bytes() - self._baseline_bytes)
            utilization = min(100, round(self._cpu_percent()))
        else:
            growth, utilization = 0, 0
        return DeviceReading(
            used_bytes=min(total, CONTEXT_BYTES + growth),
            total_bytes=total,
            utilization_percent=utilization,
            temperature_c=35 + utilization * 45 // 100,
            power_watts=25.0 + 2.0 * utilization,
        )

    def other_processes(self, index: int) -> tuple[tuple[int, int], ...]:
        return ()  # a simulated device is this process's alone

    def bytes_held_by_others(self, index: int) -> int:
        return 0

    def close(self) -> None:
        pass
