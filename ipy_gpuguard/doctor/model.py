"""What the doctor reports: one :class:`Check` per fact of the environment, and their verdict."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from enum import Enum

from ..diagnosis import Remedy


class Status(str, Enum):
    """A check's verdict; only :attr:`PROBLEM` makes the doctor exit with status 1."""

    OK = "ok"
    WARNING = "warning"
    PROBLEM = "problem"
    UNKNOWN = "could not check"


@dataclass(frozen=True)
class Verdict:
    """What one check found.

    Parameters
    ----------
    found
        The fact in one sentence; for :attr:`Status.UNKNOWN`, why it could not be checked.
    details
        Supporting lines: what each source saw, where a library was loaded from.
    remedies
        From the diagnosis' catalog, filled with this machine's facts; for a warning or a
        problem only.
    """

    status: Status
    found: str
    details: tuple[str, ...] = ()
    remedies: tuple[Remedy, ...] = ()


@dataclass(frozen=True)
class Check:
    """One row of the report: a check's stable ``id`` (``gpus``), its title and verdict."""

    id: str
    title: str
    verdict: Verdict

    @property
    def status(self) -> Status:
        return self.verdict.status


@dataclass(frozen=True)
class Report:
    """All checks, in the order they were run, and how long running them took."""

    checks: tuple[Check, ...]
    seconds: float

    @property
    def exit_status(self) -> int:
        """0 when nothing is wrong, 1 when a check found a problem."""
        return int(any(check.status is Status.PROBLEM for check in self.checks))

    def counts(self) -> dict[Status, int]:
        """How many checks ended in each status, every status present."""
        found = Counter(check.status for check in self.checks)
        return {status: found[status] for status in Status}

    def check(self, check_id: str) -> Check:
        """The check with ``check_id``; ``KeyError`` names the ids there are."""
        for check in self.checks:
            if check.id == check_id:
                return check
        raise KeyError(f"no check {check_id!r}; there are {[c.id for c in self.checks]}")
