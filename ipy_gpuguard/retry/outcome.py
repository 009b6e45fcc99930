"""How one attempt of a retry ended: a whole run of the cell, or a measurement of the guard's."""

from __future__ import annotations

from dataclasses import dataclass

from ..protocol import Reclaim


@dataclass
class RunOutcome:
    """How one attempt's run ended, filled in by the session when the run finishes."""

    finished: bool = False
    error: str | None = None  # "TypeName: message" of a failure
    out_of_memory: bool = False
    fit_fraction: float | None = None
    peak_bytes: int | None = None
    allocator_after_bytes: int | None = None  # after freeing a failure's memory
    reclaimed: Reclaim | None = None  # what that freeing gave back, as the card says it
    interrupted: bool = False  # the person's Stop reached the run: no further attempt
    probed: bool = False  # measured by the guard's own training calls, not a run of the cell
