"""The incident log: one JSON line per failed guarded cell, for ``%gpuguard history``.

JSON lines, appended: a crash mid-write loses one line at most, and the lab extension (or a
person with ``tail``) can read what happened even when the kernel died. Nothing from the
environment beyond an allow-list is written, and the cell's source only when configured.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..diagnosis import Diagnosis
from ..protocol import SCHEMA_VERSION
from ..protocol.files import open_regular, os_reason, readable_by_others

#: How much of the file's end is read for the recent incidents: lines are short.
_TAIL_BYTES = 256 * 1024


@dataclass(frozen=True)
class Incident:
    """One failure of a guarded cell, as written to the log: ``version`` is the protocol's
    schema version, ``pid`` the kernel's process, ``cell_id`` the frontend's id of the cell,
    ``card`` the id of the card it got (what a later outcome names)."""

    time: str
    rule_id: str
    kind: str
    title: str
    error_type: str
    facts: Mapping[str, Any]
    options: Mapping[str, Any]
    outcome: str
    environment: Mapping[str, str] = field(default_factory=dict)
    cell: str | None = None
    cell_id: str | None = None
    card: str | None = None
    pid: int = field(default_factory=os.getpid)
    version: int = SCHEMA_VERSION

    @classmethod
    def of(
        cls,
        diagnosis: Diagnosis,
        options: Mapping[str, Any],
        outcome: str,
        environment: Mapping[str, str],
        cell: str | None = None,
        cell_id: str | None = None,
        card: str | None = None,
    ) -> Incident:
        return cls(
            time=_now(),
            rule_id=diagnosis.rule_id,
            kind=diagnosis.kind.value,
            title=diagnosis.title,
            error_type=diagnosis.error_type,
            facts={name: _jsonable(value) for name, value in diagnosis.facts.items()},
            options=dict(options),
            outcome=outcome,
            environment=dict(environment),
            cell=cell,
            cell_id=cell_id,
            card=card,
        )


@dataclass(frozen=True)
class LaterOutcome:
    """What became of an incident after it was written (a retry from its card fixed the
    cell): a line of its own, since the log is only appended to; ``updates`` is the card."""

    updates: str
    outcome: str
    time: str = field(default_factory=lambda: _now())
    version: int = SCHEMA_VERSION


class IncidentLog:
    """Appends incidents to ``path`` (created on first write) and reads back the recent ones."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def append(self, incident: Incident | LaterOutcome) -> bool:
        """Append ``incident``; ``False`` (and one warning line) when the log cannot be written.

        The log is a regular file of its owner's alone, like the batch memory: it holds facts
        of the person's work, and the cell's source where configured. An existing log that
        others can read is made the owner's alone, with one warning line; where it cannot be,
        the incident goes in without the cell's source. A link at its path is not followed.
        """
        try:
            with self._lock:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                handle = open_regular(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
                try:
                    record = self._as_written(incident, handle)
                    line = json.dumps(asdict(record), ensure_ascii=False, sort_keys=True)
                    # After a line cut short (a full disk, a crash), this one starts its own.
                    start = b"" if _ends_a_line(handle) else b"\n"
                    _write_all(handle, start + line.encode("utf-8") + b"\n")
                finally:
                    os.close(handle)
        except OSError as error:
            print(
                f"ipy_gpuguard: cannot write the incident log {self.path} ({os_reason(error)})",
                file=sys.stderr,
            )
            return False
        return True

    def _as_written(self, record: Incident | LaterOutcome, handle: int) -> Incident | LaterOutcome:
        """``record`` without the cell's source where the log cannot be made private."""
        if isinstance(record, Incident) and record.cell is not None and not self._private(handle):
            return replace(record, cell=None)
        return record

    def _private(self, handle: int) -> bool:
        """Whether the open log is its owner's alone, after making it so where others could
        read it (one warning line either way)."""
        if not readable_by_others(handle):
            return True
        try:
            os.fchmod(handle, 0o600)
        except OSError:
            print(
                f"ipy_gpuguard: the incident log {self.path} can be read by others and cannot be "
                "made private: the cell's source is left out of it",
                file=sys.stderr,
            )
            return False
        print(
            f"ipy_gpuguard: the incident log {self.path} could be read by others; it is now "
            "yours alone (mode 0600), as it holds the cell's source",
            file=sys.stderr,
        )
        return True

    def recent(self, count: int) -> list[dict[str, Any]]:
        """The last ``count`` incidents, oldest first; lines that are not JSON are skipped.
        ``OSError`` when the log is not a regular file (a link, a FIFO)."""
        try:
            handle = open_regular(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return []
        with os.fdopen(handle, "rb") as log:
            log.seek(0, os.SEEK_END)
            log.seek(max(log.tell() - _TAIL_BYTES, 0))
            tail = log.read().decode("utf-8", "replace")
        incidents: list[dict[str, Any]] = []
        for line in tail.splitlines():
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):
                continue  # a partial first line of the tail, a line cut by a crash, or a bomb
            if not isinstance(record, dict):
                continue
            if "updates" in record:
                _apply_later_outcome(incidents, record)
            else:
                incidents.append(record)
        return incidents[-count:] if count > 0 else []


def _apply_later_outcome(incidents: list[dict[str, Any]], later: dict[str, Any]) -> None:
    """The latest incident of the card ``later`` names takes its outcome."""
    for incident in reversed(incidents):
        if incident.get("card") is not None and incident.get("card") == later.get("updates"):
            incident["outcome"] = later.get("outcome", incident.get("outcome"))
            return


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _ends_a_line(handle: int) -> bool:
    """Whether the file is empty or its last byte ends a line."""
    size = os.fstat(handle).st_size
    return size == 0 or os.pread(handle, 1, size - 1) == b"\n"


def _write_all(handle: int, data: bytes) -> None:
    """Write all of ``data``: a write that stops short (a full disk) raises, as it would on
    the next byte."""
    while data:
        data = data[os.write(handle, data) :]


def _jsonable(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value
