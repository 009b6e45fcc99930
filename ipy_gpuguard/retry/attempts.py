"""Running a failed cell again with smaller batches: one attempt at a time, or a whole search.

Each attempt rewrites the cell (:mod:`.rewrite`), sets the namespace variables an earlier cell
defined, and runs the cell through the shell, guarded like any other. The session records how
it ended and frees what a failure pinned, so this module only decides: which size next, whether
memory came back, when to stop, and what worked, which it remembers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..protocol import AttemptRecord, Reclaim
from .find import BatchFinding
from .memory import BatchMemory, Remembered
from .resolve import BatchTarget, Literal
from .rewrite import Rewrite, rewrite
from .search import BatchSearch, SearchSettings, Step, Trial

#: Memory still held after freeing, beyond the allocator's bytes before the cell, above which
#: a retry in this kernel would fail again: this share of the device, and at least this much.
HELD_SHARE = 0.05
HELD_FLOOR_BYTES = 256 * 2**20


#: Wraps one attempt's run: gets the run, returns its outcome.
AroundRun = Callable[[Callable[[], "RunOutcome"]], "RunOutcome"]


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


@dataclass(frozen=True)
class Attempt:
    """One attempt: its size, how it ended, and the cell it ran (with its edits)."""

    size: int
    outcome: RunOutcome
    rewrite: Rewrite

    @property
    def fits(self) -> bool:
        return self.outcome.finished and self.outcome.error is None

    def record(self) -> AttemptRecord:
        """The attempt as the card's data."""
        outcome = self.outcome
        result = "fits" if self.fits else "out_of_memory" if outcome.out_of_memory else "failed"
        return AttemptRecord(self.size, result, outcome.peak_bytes, outcome.error)


@dataclass(frozen=True)
class RetrySetup:
    """Everything a retry needs that the failed run knew."""

    cell: str
    finding: BatchFinding
    current_size: int
    first_failure: Trial
    capacity_bytes: int | None
    baseline_bytes: int | None
    min_batch: int = 1
    margin: float = 0.1
    keep_effective_batch: bool = False
    remembered: Remembered | None = None
    memory: BatchMemory | None = None
    memory_key: str = ""


@dataclass
class CellRetry:
    """The retries of one failed cell; ``run`` runs a rewritten cell and says how it ended."""

    setup: RetrySetup
    run: Callable[[Rewrite], RunOutcome]
    find_max: bool = False
    search: BatchSearch = field(init=False)
    attempts: list[Attempt] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.search = self._new_search(self.find_max)

    @property
    def target(self) -> BatchTarget:
        assert self.setup.finding.target is not None
        return self.setup.finding.target

    def suggestion(self, runs_left: int = 1) -> Step | None:
        """The size the next click would try."""
        return self.search.next_step(runs_left)

    def attempt(self, size: int, around: AroundRun | None = None) -> Attempt:
        """Run the cell once with ``size``; record it, and remember it when it fits.

        ``around`` wraps the run (a card runs it inside its output area).
        """
        rewritten = self.rewrite(size)
        outcome = around(lambda: self.run(rewritten)) if around else self.run(rewritten)
        attempt = Attempt(size, outcome, rewritten)
        self.attempts.append(attempt)
        self.search.record(
            Trial(size, attempt.fits, outcome.peak_bytes, outcome.fit_fraction)
            if outcome.out_of_memory or attempt.fits
            else Trial(size, False)
        )
        if attempt.fits:
            self._remember(attempt)
        return attempt

    def auto(
        self,
        runs: int,
        find_max: bool,
        report: Callable[[Attempt], None],
        around: AroundRun | None = None,
    ) -> Attempt | None:
        """Attempt by itself, up to ``runs`` times; stops at the person's Stop, at a failure
        other than memory, or when memory is not coming back, after a last run at the largest size that fitted (so
        that the search ends on a run that fits, whose variables the cell then has). Returns
        the last attempt."""
        if find_max and not self.search.settings.find_max:
            self.search = self._new_search(True, self.search.trials)
        last = None
        for used in range(runs):
            step = self.search.next_step(runs - used)
            if step is None:
                break
            last = self.attempt(step.size, around)
            report(last)
            if last.outcome.interrupted or not (last.fits or last.outcome.out_of_memory):
                break
            if self.memory_held(last):
                best = self.search.largest_fitting
                if best is not None:  # end on a run that fits: its variables are the cell's
                    last = self.attempt(best, around)
                    report(last)
                break
        return last

    def can_search(self, runs: int) -> bool:
        """Whether a search for the largest size that fits has a size left to run."""
        search = self._new_search(True, self.search.trials)
        return search.next_step(runs) is not None

    def held_bytes(self, attempt: Attempt) -> int | None:
        """Bytes the allocator still held once a failed attempt was freed, beyond what it held
        before the cell first ran (not before the attempt: what earlier attempts left counts)."""
        after, baseline = attempt.outcome.allocator_after_bytes, self.setup.baseline_bytes
        if attempt.fits or after is None or baseline is None:
            return None
        return max(after - baseline, 0)

    def memory_held(self, attempt: Attempt) -> int | None:
        """Bytes still held after a failed attempt, when too many for a retry here to work."""
        held = self.held_bytes(attempt)
        capacity = self.setup.capacity_bytes or 0
        if held is None or held <= max(HELD_SHARE * capacity, HELD_FLOOR_BYTES):
            return None
        return held

    def rewrite(self, size: int) -> Rewrite:
        """The cell with ``size`` (and the accumulation steps that keep the effective batch)."""
        return rewrite(self.setup.cell, self.target, size, self._accumulation(size))

    def _new_search(self, find_max: bool, trials: list[Trial] | None = None) -> BatchSearch:
        setup = self.setup
        accumulation = setup.finding.accumulation
        settings = SearchSettings(
            start=setup.current_size,
            min_batch=setup.min_batch,
            margin=setup.margin,
            find_max=find_max,
            capacity_bytes=setup.capacity_bytes,
            remembered=setup.remembered.batch_size if setup.remembered else None,
            effective_batch=(
                setup.current_size * accumulation.value
                if setup.keep_effective_batch and accumulation is not None
                else None
            ),
        )
        search = BatchSearch(settings)
        for trial in trials or [setup.first_failure]:
            search.record(trial)
        return search

    def _accumulation(self, size: int) -> tuple[Literal, int] | None:
        accumulation = self.setup.finding.accumulation
        if not self.setup.keep_effective_batch or accumulation is None:
            return None
        effective = self.setup.current_size * accumulation.value
        return (accumulation, max(effective // size, 1))

    def _remember(self, attempt: Attempt) -> None:
        if self.setup.memory is None:
            return
        self.setup.memory.remember(
            self.setup.memory_key,
            Remembered(attempt.size, self.target.label, attempt.outcome.peak_bytes, time.time()),
        )
