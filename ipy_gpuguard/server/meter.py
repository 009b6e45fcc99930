"""The GPU meter's reading: every GPU, and the memory each kernel of this server holds on them.

One reading is shared by every client and refreshed at most once a second; NVML is called only
in a worker thread, never on the server's event loop (an NVML call can block on a busy driver).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import replace

from ..protocol import KernelShare, MeterDevice, MeterReading, read_state, state_path
from ..telemetry import DeviceBackend, open_backend

log = logging.getLogger(__name__)

#: Seconds a reading is served before the next one is taken.
MIN_INTERVAL_S = 1.0
#: What the meter says when NVML's pids are not this server's (a container without the host's
#: pid namespace): a kernel's share would be zero, which would be a lie.
NOT_ATTRIBUTABLE = (
    "cannot attribute GPU memory to kernels: NVML reports the processes of another pid "
    "namespace (a container)"
)

#: Each kernel's processes: its own pid and its children's, or nothing when it has none yet.
KernelPids = Mapping[str, tuple[int, ...]]


class Meter:
    """Owns the telemetry source of the server and the last reading.

    Parameters
    ----------
    open_telemetry
        Opens NVML, or simulated devices from ``GPUGUARD_SIMULATE`` where NVML finds no GPU.
    pid_exists
        Whether a pid is a process of this pid namespace (``psutil.pid_exists``).
    runtime_dir
        Jupyter's runtime directory, where the kernels record their state: a simulated device
        has no process list, so a kernel's share of it is what the kernel last recorded.
    """

    def __init__(
        self,
        open_telemetry: Callable[[str], DeviceBackend] = open_backend,
        simulate: str | None = None,
        pid_exists: Callable[[int], bool] | None = None,
        clock: Callable[[], float] = time.monotonic,
        runtime_dir: str | None = None,
    ) -> None:
        self.open_telemetry = open_telemetry
        self._runtime_dir = runtime_dir
        self._simulate = os.environ.get("GPUGUARD_SIMULATE", "") if simulate is None else simulate
        self._pid_exists = pid_exists
        self._clock = clock
        self._backend: DeviceBackend | None = None
        self._cached: tuple[float, MeterReading] | None = None
        self._taking: asyncio.Future[MeterReading] | None = None

    async def reading(self, kernel_pids: Mapping[str, int | None]) -> MeterReading:
        """The shared reading, taken again in a worker thread when it is older than a second.

        One reading is taken at a time, and no client waits on one while an older reading
        exists: a driver that blocks NVML for a minute leaves every meter with the last reading
        (and its time) instead of a hung request. Only the very first reading is waited for.
        ``kernel_pids`` is each kernel's own pid; their process trees (a scan of every process)
        are walked in that thread too, and only for a new reading.
        """
        cached = self._cached
        if cached is not None and self._clock() - cached[0] < MIN_INTERVAL_S:
            return cached[1]
        if self._taking is None:
            self._taking = asyncio.ensure_future(self._take(kernel_pids))
            self._taking.add_done_callback(_said_once)
        if cached is not None:
            return cached[1]
        return await asyncio.shield(self._taking)

    async def _take(self, kernel_pids: Mapping[str, int | None]) -> MeterReading:
        try:
            reading = await asyncio.to_thread(self._read_trees, kernel_pids)
            self._cached = (self._clock(), reading)
            return reading
        finally:
            self._taking = None

    def _read_trees(self, kernel_pids: Mapping[str, int | None]) -> MeterReading:
        return self.read({kernel_id: process_tree(pid) for kernel_id, pid in kernel_pids.items()})

    def read(self, kernels: KernelPids) -> MeterReading:
        """Read every device and the kernels' shares (blocking: a worker thread's job)."""
        if self._backend is None:
            self._backend = self.open_telemetry(self._simulate)
        backend = self._backend
        infos = backend.devices()
        devices = []
        holders: dict[int, int] = {}
        for info in infos:
            reading = backend.read(info.index)
            devices.append(
                MeterDevice(
                    index=info.index,
                    name=info.name,
                    simulated=info.simulated,
                    used_bytes=reading.used_bytes,
                    total_bytes=reading.total_bytes or info.total_bytes,
                    utilization_percent=reading.utilization_percent,
                    temperature_c=reading.temperature_c,
                    problem=reading.problem,
                    uuid=info.uuid,
                )
            )
            for pid, used in backend.other_processes(info.index):
                holders[pid] = holders.get(pid, 0) + used
        attribution = self._attribution(holders)
        if backend.kind == "simulated":
            shares = self._recorded_shares(kernels)
            devices = [_holding(device, shares, len(devices)) for device in devices]
        else:
            shares = () if attribution else _shares(kernels, holders)
        source = backend.kind if infos or backend.kind != "none" else "none"
        return MeterReading(
            source=source if source in ("nvml", "simulated") else "none",
            reason=None if infos else backend.summary,
            updated_at=time.time(),
            devices=tuple(devices),
            kernels=shares,
            attribution=attribution,
        )

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()
            self._backend = None

    def _recorded_shares(self, kernels: KernelPids) -> tuple[KernelShare, ...]:
        """Each kernel's simulated memory, from its state file (none yet: nothing recorded)."""
        shares: list[KernelShare] = []
        if self._runtime_dir is None:
            return ()
        for kernel_id, pids in sorted(kernels.items()):
            try:
                state = read_state(state_path(self._runtime_dir, kernel_id))
            except ValueError:
                continue  # not a record: its kernel's share is not known, the others' are
            if state is None or state.pid not in pids:
                continue  # none yet, or written by a process that is gone: a dead kernel
            used = sum(device.used_bytes or 0 for device in state.devices)
            shares.append(KernelShare(kernel_id, pids, used))
        return tuple(shares)

    def _attribution(self, holders: Mapping[int, int]) -> str | None:
        exists = self._pid_exists
        if exists is None:
            import psutil

            exists = psutil.pid_exists
        if holders and not any(exists(pid) for pid in holders):
            return NOT_ATTRIBUTABLE
        return None


def _said_once(taken: asyncio.Future[MeterReading]) -> None:
    """A reading that failed with nobody waiting on it (they had the last one) is logged once,
    in a line, instead of as asyncio's "exception was never retrieved" with a traceback."""
    error = None if taken.cancelled() else taken.exception()
    if error is not None:
        log.warning(
            "ipy_gpuguard: the GPU meter's reading failed: %s: %s", type(error).__name__, error
        )


def _holding(device: MeterDevice, shares: tuple[KernelShare, ...], count: int) -> MeterDevice:
    """A simulated device as the meter shows it: what the live kernels recorded of it.

    Each kernel's simulated GPU follows that kernel's own memory; the server's would follow the
    server's, which no kernel's share is part of. So the device holds the kernels' shares (the
    same on each of ``count`` devices), and no share can exceed it.
    """
    used = sum(share.used_bytes for share in shares) // max(count, 1)
    total = device.total_bytes
    return replace(device, used_bytes=min(used, total) if total else used)


def _shares(kernels: KernelPids, holders: Mapping[int, int]) -> tuple[KernelShare, ...]:
    return tuple(
        KernelShare(kernel_id, pids, sum(holders.get(pid, 0) for pid in pids))
        for kernel_id, pids in sorted(kernels.items())
    )


def process_tree(pid: int | None) -> tuple[int, ...]:
    """A kernel's pid and its children's (a framework may run work in a child process)."""
    if pid is None:
        return ()
    import psutil

    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return ()  # the kernel died: nothing of it holds memory
    except psutil.Error:
        return (pid,)
    return (pid, *(child.pid for child in children))
