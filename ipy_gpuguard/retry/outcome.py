"""How one attempt of a retry ended (a whole run of the cell, or a measurement of the guard's),
and how the cell ends. Light: the shell's magics read it before any retry is imported."""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from ..protocol import Reclaim


@dataclass(frozen=True)
class RunOutcome:
    """How one attempt ended: a whole run of the cell (as the guard's finish of it saw it), or
    a measurement of the guard's own."""

    finished: bool = False
    error: str | None = None  # "TypeName: message" of a failure
    out_of_memory: bool = False
    fit_fraction: float | None = None
    peak_bytes: int | None = None
    #: For a measurement that fitted: what the allocator held after it (the part of its peak
    #: that does not grow with the batch; see :mod:`.forecast`).
    fixed_bytes: int | None = None
    allocator_after_bytes: int | None = None  # after freeing a failure's memory
    reclaimed: Reclaim | None = None  # what that freeing gave back, as the card says it
    interrupted: bool = False  # the person's Stop reached the run: no further attempt
    probed: bool = False  # measured by the guard's own training calls, not a run of the cell
    fit_cut: bool = False  # the cell raised nothing, but a fit of it did not run to its end

    def with_stop(self, stopped: bool) -> RunOutcome:
        """This outcome, interrupted too when the person's Stop landed around the run (in the
        guard's start or finish of it, which held it) rather than in it."""
        return replace(self, interrupted=self.interrupted or stopped)


class Ending(enum.Enum):
    """How a guarded cell ends, for the frontend (its ``execute_reply``)."""

    AS_RAN = "as_ran"  # its own result stands: ok, or its own error
    FIXED = "fixed"  # the last whole run of a retry or a search fitted: it ends ok
    STOPPED = "stopped"  # the person's Stop ended the guard's work: KeyboardInterrupt
