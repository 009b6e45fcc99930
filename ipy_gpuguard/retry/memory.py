"""Batch sizes that worked, remembered on disk per cell and per device memory size.

A cell is known by a hash of its source with the batch literal blanked (and without its
``%%gpuguard`` line), so the entry survives the rewrite that made it fit; the device by the
memory of the watched GPUs, since the same cell fits differently on a 16 GiB card. The file is
one small JSON object, rewritten whole through a temporary file so a crash never leaves half,
under a lock (``filelock``: Unix and Windows alike) so that two kernels remembering at once
lose nothing, readable by its owner only.
A file that cannot be written costs one warning line: the retry's result stands.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import filelock

from ..protocol.files import NotARegularFile, read_regular, replace_atomically

#: Entries kept; the oldest go first.
MAX_ENTRIES = 500
#: The most the file is read of: 500 entries take about 100 kB.
MAX_FILE_BYTES = 1 << 20


@dataclass(frozen=True)
class Remembered:
    """What worked for one cell on one device size."""

    batch_size: int
    batch_label: str
    peak_bytes: int | None
    saved_at: float


def cell_key(cell_without_batch: str, device_bytes: tuple[int, ...]) -> str:
    """The key of a cell (its batch literal already blanked) on devices of these sizes."""
    lines = cell_without_batch.splitlines()
    if lines and lines[0].lstrip().startswith("%%gpuguard"):
        lines = lines[1:]
    devices = ",".join(map(str, device_bytes)) or "cpu"
    digest = hashlib.sha256("\n".join(lines).strip().encode("utf-8")).hexdigest()[:32]
    return f"{digest}@{devices}"


class BatchMemory:
    """The file of remembered sizes; a missing or unreadable file is an empty memory."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def recall(self, key: str) -> Remembered | None:
        entry = self._read().get(key)
        if not isinstance(entry, dict):
            return None
        try:
            return Remembered(
                int(entry["batch_size"]),
                str(entry["batch_label"]),
                None if entry.get("peak_bytes") is None else int(entry["peak_bytes"]),
                float(entry["saved_at"]),
            )
        except (KeyError, TypeError, ValueError):
            return None

    def remember(self, key: str, entry: Remembered) -> bool:
        """Write ``entry``; ``False`` (and one warning line) when the file cannot be written."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._locked():
                self._write(key, entry)
        except OSError as error:
            print(
                f"ipy_gpuguard: cannot remember batch size {entry.batch_size} in {self.path} "
                f"({error}); the retry's result stands",
                file=sys.stderr,
            )
            return False
        return True

    def _write(self, key: str, entry: Remembered) -> None:
        entries = self._read()
        entries.pop(key, None)
        entries[key] = {
            "batch_size": entry.batch_size,
            "batch_label": entry.batch_label,
            "peak_bytes": entry.peak_bytes,
            "saved_at": entry.saved_at,
        }
        kept = dict(list(entries.items())[-MAX_ENTRIES:])
        handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".batch_sizes-")
        # mkstemp's file is the owner's alone (0600), and so is the file it replaces.
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                json.dump(kept, file, indent=1)
        except BaseException:
            os.unlink(temporary)
            raise
        replace_atomically(temporary, self.path)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the lock file beside the memory while reading and rewriting it: ``filelock``
        locks with ``flock`` on Unix and ``LockFileEx`` on Windows, and opens the lock without
        following a link."""
        lock = filelock.FileLock(self.path.with_name(self.path.name + ".lock"), mode=0o600)
        try:
            lock.acquire()
        except OSError as error:
            if error.errno in (errno.ELOOP, errno.EMLINK):  # EMLINK: FreeBSD's word for a link
                raise NotARegularFile(
                    error.errno, "a link, which the guard does not follow"
                ) from None
            raise
        try:
            yield
        finally:
            lock.release()

    def _read(self) -> dict[str, object]:
        """The entries; none where the file is absent, not a regular file (a link, a FIFO that
        would block the cell), too large, not JSON, or nested too deep."""
        try:
            raw = read_regular(self.path, MAX_FILE_BYTES)
            entries = json.loads(raw) if raw is not None else {}
        except (OSError, ValueError, RecursionError):
            return {}
        return entries if isinstance(entries, dict) else {}
