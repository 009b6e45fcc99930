"""Running a failed cell again with smaller batches: one attempt at a time, or a whole search.

Each attempt rewrites the cell (``batch/``), sets the namespace variables an earlier cell
defined, and runs the cell through the shell, guarded like any other. The session records how
it ended and frees what a failure pinned, so this module only decides: which size next, whether
memory came back, when to stop, and what worked, which it remembers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .batch import (
    BatchFinding,
    BatchMemory,
    BatchSearch,
    BatchTarget,
    LineChange,
    Literal,
    Remembered,
    Rewrite,
    SearchSettings,
    Step,
    Trial,
    rewrite,
)
from .telemetry.units import format_bytes

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


@dataclass(frozen=True)
class RetryOffer:
    """What the card offers: the size a retry would try and what it changes, or why none.

    ``where`` says what the retry changes (``batch_size=256 on line 4``); ``choices`` are the
    variables the person can pick from when the cell has several and none is passed as one.
    """

    size: int | None
    current: int | None = None
    where: str = ""
    reason: str = ""
    choices: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class RetryRequest:
    """The retries the session could set up for an out-of-memory failure.

    ``retry`` is ``None`` when none is possible (``offer.reason`` says why); ``auto_runs`` is
    how many attempts to make by themselves (``--auto-retry``), 0 to wait for a click.
    """

    retry: CellRetry | None
    offer: RetryOffer
    auto_runs: int = 0
    find_max: bool = False


@dataclass(frozen=True)
class Attempt:
    """One attempt, for the card: its size, how it ended, and the cell's changed lines."""

    size: int
    outcome: RunOutcome
    changes: tuple[LineChange, ...]
    namespace: dict[str, int]

    @property
    def fits(self) -> bool:
        return self.outcome.finished and self.outcome.error is None

    def change_lines(self) -> list[str]:
        """What this attempt changed, one line each: ``line 4: BATCH = 256 → BATCH = 64``."""
        lines = [change.text for change in self.changes]
        lines += [
            f"{name} = {value} (set in the namespace)" for name, value in self.namespace.items()
        ]
        return lines


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
        rewritten = rewrite(self.setup.cell, self.target, size, self._accumulation(size))
        outcome = around(lambda: self.run(rewritten)) if around else self.run(rewritten)
        attempt = Attempt(size, outcome, rewritten.changes, rewritten.namespace)
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
        """Attempt by itself, up to ``runs`` times; stops at a failure other than memory, or
        when memory is not coming back. Returns the last attempt."""
        if find_max and not self.search.settings.find_max:
            self.search = self._new_search(True, self.search.trials)
        last = None
        for used in range(runs):
            step = self.search.next_step(runs - used)
            if step is None:
                break
            last = self.attempt(step.size, around)
            report(last)
            if not (last.fits or last.outcome.out_of_memory) or self.memory_held(last):
                break
        return last

    def memory_held(self, attempt: Attempt) -> int | None:
        """Bytes still held after a failed attempt, when too many for a retry here to work."""
        after, baseline = attempt.outcome.allocator_after_bytes, self.setup.baseline_bytes
        if attempt.fits or after is None or baseline is None:
            return None
        capacity = self.setup.capacity_bytes or 0
        held = after - baseline
        return held if held > max(HELD_SHARE * capacity, HELD_FLOOR_BYTES) else None

    def restart_steps(self, size: int) -> list[str]:
        """How to run the cell with ``size`` in a fresh kernel, where memory starts empty."""
        change = rewrite(self.setup.cell, self.target, size, self._accumulation(size))
        if change.changes:
            edit = "; ".join(c.text for c in change.changes)
        else:
            edit = f"set {self.target.name} = {size} in the cell that defines it"
        return [
            "Restart the kernel (Kernel ▸ Restart Kernel).",
            f"Change the batch size: {edit}.",
            "Run all cells above this one, then this one (Run ▸ Run All Above).",
        ]

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


def attempt_line(attempt: Attempt, capacity_bytes: int | None) -> str:
    """One attempt in words: ``batch size 96: fits (peak 6.1 GiB of 8 GiB)``."""
    outcome = attempt.outcome
    if attempt.fits:
        return f"batch size {attempt.size}: fits{peak_text(outcome.peak_bytes, capacity_bytes)}"
    if outcome.out_of_memory:
        return f"batch size {attempt.size}: out of memory"
    return f"batch size {attempt.size}: failed, not for memory ({outcome.error})"


def peak_text(peak_bytes: int | None, capacity_bytes: int | None) -> str:
    """`` (peak 6.1 GiB of 8 GiB)``, or nothing when no allocator was read."""
    if peak_bytes is None:
        return ""
    of = f" of {format_bytes(capacity_bytes)}" if capacity_bytes else ""
    return f" (peak {format_bytes(peak_bytes)}{of})"
