"""The kernel's state file: what the server extension reads about this kernel, even once it died.

One small JSON file per kernel, ``<jupyter runtime dir>/ipy_gpuguard/kernel-<kernel id>.json``,
replaced atomically (a reader never sees half a file), written at most once a second while a
guarded cell runs and once when it ends, and removed when the extension is unloaded. A file
that cannot be written costs one warning line, never the cell. Each record written is also
told to :attr:`KernelStateFile.written`: the comm reports it to a frontend that asked, which
is how a frontend whose server runs on another machine than the kernel learns it.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import psutil

from ..protocol import DeviceState, KernelState, RunningCell, to_json
from ..protocol.files import read_regular, replace_atomically
from ..protocol.state import MAX_STATE_BYTES
from ..telemetry import DeviceInfo, Sample
from ..watchdog import ProgressSnapshot

#: Seconds between two writes while a cell runs.
MIN_WRITE_INTERVAL_S = 1.0
_CONNECTION_FILE = re.compile(r"kernel-(?P<id>[\w-]+)\.json$")


def kernel_id_of(connection_file: str) -> str | None:
    """The kernel id in a connection file's name, as Jupyter names them (``kernel-<id>.json``)."""
    match = _CONNECTION_FILE.search(os.path.basename(connection_file))
    return match.group("id") if match else None


class KernelStateFile:
    """Keeps the state file of one kernel up to date; every write is a whole new file."""

    def __init__(
        self,
        path: Path,
        kernel_id: str | None,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.path = path
        self._clock = clock
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._last_write: float | None = None
        self._warned = False
        #: Where its one warning goes: the stream of the last cell's start (a write fails on
        #: the sampler's thread while a cell runs, and must not land in a stream the person's
        #: code redirected ``sys.stderr`` to, nor in one a ``%%capture`` of the load closed).
        self._stderr = sys.stderr
        self.state = KernelState(
            pid=os.getpid(),
            kernel_id=kernel_id,
            updated_at=clock(),
            running=False,
            cell=None,
            phase=None,
            step=0,
            last_step_at=None,
            devices=(),
            last_rule_id=None,
            outcome=None,
            platform=sys.platform,
            host=socket.gethostname(),
        )
        #: Hears each record as it is written (the comm's reports to a frontend that asked);
        #: from the sampler's thread while a cell runs; it must not raise.
        self.written: Callable[[KernelState], None] = lambda state: None

    def loaded(self) -> None:
        """The guard was loaded: this process's record replaces any that an earlier process of
        the same kernel (before a restart) left, which a post-mortem would misread. A kernel
        that ends cleanly removes it (a kernel that dies leaves it for the post-mortem)."""
        self._update(force=True, **host_memory())
        atexit.register(self.remove)

    def cell_started(self, cell: RunningCell) -> None:
        self._stderr = sys.stderr
        self._update(
            force=True, running=True, cell=cell, phase=None, step=0, last_step_at=None, outcome=None
        )

    def sampled(
        self, sample: Sample, devices: tuple[DeviceInfo, ...], progress: ProgressSnapshot
    ) -> None:
        """From the sampler's thread: the latest sample and progress, at most once a second."""
        self._update(
            force=False,
            devices=device_states(sample, devices),
            **self._progress(progress),
            **host_memory(),
        )

    def cell_ended(self, outcome: str, rule_id: str | None, progress: ProgressSnapshot) -> None:
        """The cell's outcome (``ok``, ``error``, ``fixed``) and its final progress."""
        self._update(
            force=True,
            running=False,
            outcome=outcome,
            last_rule_id=rule_id,
            **self._progress(progress),
        )

    def _progress(self, progress: ProgressSnapshot) -> dict[str, object]:
        last_step_at = None
        if progress.steps:  # the recorder's clock is monotonic: give the wall-clock time
            last_step_at = self._clock() - (self._monotonic() - progress.last_progress_at)
        return {"phase": progress.phase, "step": progress.steps, "last_step_at": last_step_at}

    def remove(self) -> None:
        """Remove this process's record; one that another process wrote (a second kernel of
        the same id) is that process's, and stays."""
        atexit.unregister(self.remove)
        try:
            raw = read_regular(self.path, MAX_STATE_BYTES)
            recorded = json.loads(raw) if raw is not None else None
        except (OSError, ValueError, RecursionError):
            return
        if not isinstance(recorded, dict) or recorded.get("pid") != self.state.pid:
            return
        try:
            self.path.unlink(missing_ok=True)
        except OSError as error:
            self._warn(error)

    def _update(self, force: bool, **changes: object) -> None:
        with self._lock:
            now = self._clock()
            self.state = replace(self.state, updated_at=now, **changes)  # type: ignore[arg-type]
            if (
                not force
                and self._last_write is not None
                and now - self._last_write < MIN_WRITE_INTERVAL_S
            ):
                return
            self._last_write = now
            self._write(json.dumps(to_json(self.state)))
            self.written(self.state)

    def _write(self, text: str) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(
                dir=self.path.parent, prefix=".kernel-", suffix=".tmp"
            )
        except OSError as error:
            self._warn(error)
            return
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                file.write(text)
        except OSError as error:
            with contextlib.suppress(OSError):
                os.unlink(temporary)  # a full disk leaves no empty file per write
            self._warn(error)
            return
        try:
            replace_atomically(temporary, self.path)  # removes the temporary when it fails
        except OSError as error:
            self._warn(error)

    def _warn(self, error: OSError) -> None:
        if not self._warned:
            self._warned = True
            with contextlib.suppress(ValueError, OSError):  # a closed stream says nothing more
                print(
                    f"ipy_gpuguard: cannot write the kernel's state file ({error})",
                    file=self._stderr,
                )


def host_memory() -> dict[str, int]:
    """The machine's available and total memory (about 20 µs): a kernel that the out-of-memory
    killer ends leaves a last record with little available."""
    memory = psutil.virtual_memory()
    return {"host_available_bytes": int(memory.available), "host_total_bytes": int(memory.total)}


def device_states(sample: Sample, devices: tuple[DeviceInfo, ...]) -> tuple[DeviceState, ...]:
    infos = {info.index: info for info in devices}
    return tuple(
        DeviceState(
            index=device.index,
            name=infos[device.index].name if device.index in infos else f"GPU {device.index}",
            simulated=infos[device.index].simulated if device.index in infos else False,
            used_bytes=device.device.used_bytes,
            total_bytes=device.device.total_bytes,
            allocator_bytes=device.allocator.current_bytes if device.allocator else None,
            utilization_percent=device.device.utilization_percent,
            temperature_c=device.device.temperature_c,
            uuid=infos[device.index].uuid if device.index in infos else None,
        )
        for device in sample.devices
    )
