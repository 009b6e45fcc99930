"""Running a cell again with other batch sizes: one attempt at a time, or a whole search.

Each attempt rewrites the cell (:mod:`.rewrite`), sets the namespace variables an earlier cell
defined, and runs the cell through the shell, guarded like any other. The session records how
it ended and frees what a failure pinned, so this module only decides: which size next, whether
memory came back, when to stop, and what worked, which it remembers.

A search for the largest size that fits tries each size with a probe (:mod:`.probe`: a few
training steps, then undone), and then runs the cell once, whole, at the size it found. A cell
whose training the heartbeat does not see (no Keras ``fit``) is searched by whole runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..protocol import AttemptRecord, Reclaim
from .find import BatchFinding
from .memory import BatchMemory, Remembered
from .probe import PROBE_STEPS, FitProbe
from .resolve import BatchTarget, Literal
from .rewrite import Rewrite, rewrite
from .search import BatchSearch, SearchSettings, Step, Trial

#: Memory still held after freeing, beyond the allocator's bytes before the cell, above which
#: a retry in this kernel would fail again: this share of the device, and at least this much.
HELD_SHARE = 0.05
HELD_FLOOR_BYTES = 256 * 2**20


#: The most probes one search makes (each is a few training steps, not a run).
MAX_PROBES = 32
#: The card's note when the search could not probe.
WHOLE_RUNS = (
    "Each size was a whole run: the cell's training is not a Keras fit the guard can stop "
    "after a few steps (a custom loop, or a framework the heartbeat does not see)."
)

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
    probed: bool = False  # a probe the guard ended after its steps (not a failure)


@dataclass(frozen=True)
class Attempt:
    """One attempt: its size, how it ended, and the cell it ran (with its edits)."""

    size: int
    outcome: RunOutcome
    rewrite: Rewrite
    probe: bool = False  # run as a probe: whatever it trained was put back

    @property
    def fits(self) -> bool:
        return self.outcome.finished and self.outcome.error is None

    def record(self) -> AttemptRecord:
        """The attempt as the card's data."""
        outcome = self.outcome
        result = "fits" if self.fits else "out_of_memory" if outcome.out_of_memory else "failed"
        return AttemptRecord(self.size, result, outcome.peak_bytes, outcome.error, self.probe)


@dataclass(frozen=True)
class RetrySetup:
    """Everything a retry needs that the failed run knew."""

    cell: str
    finding: BatchFinding
    current_size: int
    first_trial: Trial  # the run that failed, or (a search from a cell that fits) fitted
    capacity_bytes: int | None
    baseline_bytes: int | None
    min_batch: int = 1
    margin: float = 0.1
    keep_effective_batch: bool = False
    remembered: Remembered | None = None
    memory: BatchMemory | None = None
    memory_key: str = ""
    replicas: int = 1  # a tf.distribute strategy's, which split the batch evenly
    #: Whether the namespace held an object before the search (a generator a probe may use up).
    defined_before: Callable[[object], bool] = lambda value: False


@dataclass
class CellRetry:
    """The retries of one cell; ``run`` runs a rewritten cell, watched by a probe, and says how
    it ended. ``probing``: whether a search may probe (until a run shows no Keras ``fit``)."""

    setup: RetrySetup
    run: Callable[[Rewrite, FitProbe], RunOutcome]
    find_max: bool = False
    search: BatchSearch = field(init=False)
    attempts: list[Attempt] = field(default_factory=list)
    probing: bool = True
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.search = self._new_search(self.find_max)

    @property
    def target(self) -> BatchTarget:
        assert self.setup.finding.target is not None
        return self.setup.finding.target

    def suggestion(self, runs_left: int = 1) -> Step | None:
        """The size the next click would try."""
        return self.search.next_step(runs_left)

    def began_with(self, outcome: RunOutcome, probe: bool) -> None:
        """The cell's own run at its size, which fitted (a probe, with ``--find-max``): the
        first row of a search's table. Its trial is the setup's first."""
        size = self.setup.current_size
        self.attempts.append(Attempt(size, outcome, self.rewrite(size), probe))

    def attempt(self, size: int, around: AroundRun | None = None, probe: bool = False) -> Attempt:
        """Run the cell once with ``size``, whole or as a probe; record it, and remember it
        when a whole run fits.

        ``around`` wraps the run (a card runs it inside its output area).
        """
        rewritten = self.rewrite(size)
        watch = FitProbe(PROBE_STEPS if probe else None, self.setup.defined_before)
        outcome = (
            around(lambda: self.run(rewritten, watch)) if around else self.run(rewritten, watch)
        )
        watch.restore()
        attempt = Attempt(size, outcome, rewritten, watch.probed)
        self.attempts.append(attempt)
        self.search.record(
            Trial(size, attempt.fits, outcome.peak_bytes, outcome.fit_fraction, watch.one_batch)
            if outcome.out_of_memory or attempt.fits
            else Trial(size, False)
        )
        self._note(watch, attempt)
        if attempt.fits and not attempt.probe:
            self._remember(attempt)
        return attempt

    def by_whole_runs(self) -> None:
        """A run of the cell fitted without a Keras ``fit``: search by whole runs."""
        if self.probing:
            self.probing = False
            self.notes.append(WHOLE_RUNS)

    def _note(self, watch: FitProbe, attempt: Attempt) -> None:
        """What the card says of how the search went: whole runs, and why; a generator used up."""
        if watch.steps is not None and attempt.fits and not watch.saw_fit:
            self.by_whole_runs()
        consumed = watch.consumed_input
        if consumed is not None:
            note = (
                f"The probes drew batches from the {consumed} given to fit, which an earlier "
                "cell made: it cannot be rewound, so what they drew is gone from it."
            )
            if note not in self.notes:
                self.notes.append(note)

    def auto(
        self,
        runs: int,
        find_max: bool,
        report: Callable[[Attempt], None],
        around: AroundRun | None = None,
    ) -> Attempt | None:
        """Attempt by itself, up to ``runs`` whole runs; a search for the largest size
        (``find_max``) probes each size (up to :data:`MAX_PROBES`) where the cell allows it.
        Stops at the person's Stop, at a failure other than memory, or when memory is not
        coming back; a search ends with a whole run at the largest size that fitted (so that
        the cell's variables and its model are that run's). Returns the last attempt."""
        if find_max and not self.search.settings.find_max:
            self.search = self._new_search(True, self.search.trials)
        last: Attempt | None = None
        whole = probes = 0
        while True:
            probing = find_max and self.probing and probes < MAX_PROBES
            step = self.search.next_step(MAX_PROBES - probes + 1 if probing else runs - whole)
            best = self.search.largest_fitting
            if step is None or (probing and step.size == best):
                if best is None or _ran_whole(last, best):
                    break
                step, probing = Step(best, "the run at the size the search found"), False
            if not probing and whole >= runs:
                break
            last = self.attempt(step.size, around, probing)
            whole, probes = whole + (not probing), probes + probing
            report(last)
            if last.outcome.interrupted or not (last.fits or last.outcome.out_of_memory):
                break
            if self.memory_held(last):
                best = self.search.largest_fitting
                if best is not None and not _ran_whole(last, best):  # end on a whole run
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
            min_batch=max(setup.min_batch, setup.replicas),
            margin=setup.margin,
            find_max=find_max,
            capacity_bytes=setup.capacity_bytes,
            remembered=setup.remembered.batch_size if setup.remembered else None,
            effective_batch=(
                setup.current_size * accumulation.value
                if setup.keep_effective_batch and accumulation is not None
                else None
            ),
            replicas=setup.replicas,
        )
        search = BatchSearch(settings)
        for trial in trials or [setup.first_trial]:
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


def _ran_whole(last: Attempt | None, size: int) -> bool:
    """Whether the last attempt was a whole run at ``size`` that fitted."""
    return last is not None and last.fits and not last.probe and last.size == size
