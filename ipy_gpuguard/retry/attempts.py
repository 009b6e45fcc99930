"""Running a cell again with other batch sizes: one attempt at a time, or a whole search.

Each attempt rewrites the cell (:mod:`.rewrite`), sets the namespace variables an earlier cell
defined, and runs the cell through the shell, guarded like any other. The session records how
it ended and frees what a failure pinned, so this module only decides: which size next, whether
memory came back, when to stop, and what worked, which it remembers.

A search for the largest size that fits measures each size with the guard's own training calls
(:mod:`.measure`: a few steps of the cell's ``fit``, on its model and data, then put back),
never through the cell, and then runs the cell once, whole, at the size it found. A cell whose
sizes cannot be measured so (no Keras ``fit``, several, data that batches itself) is searched
by whole runs, the model of an earlier cell put back as it was before the cell ahead of each.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .find import BatchFinding
from .memory import BatchMemory, Remembered
from .notes import NoteKind, SearchNote, WhyWholeRuns
from .outcome import RunOutcome
from .probe import BeforeTheSearch, FitWatch
from .resolve import BatchTarget, Literal
from .rewrite import Rewrite, rewrite
from .search import BatchSearch, SearchSettings, Step, Trial

if TYPE_CHECKING:
    from .measure import FitCall

#: Memory still held after freeing, beyond the allocator's bytes before the cell, above which
#: a retry in this kernel would fail again: this share of the device, and at least this much.
HELD_SHARE = 0.05
HELD_FLOOR_BYTES = 256 * 2**20


def too_much_held(held_bytes: int, capacity_bytes: int | None) -> bool:
    """Whether ``held_bytes`` still held after freeing would make a retry here fail again;
    less is what a fit may rightly keep (a model's first fit makes its optimizer's variables)."""
    return held_bytes > max(HELD_SHARE * (capacity_bytes or 0), HELD_FLOOR_BYTES)


#: The most probes one search makes (each is a few training steps, not a run).
MAX_PROBES = 32
#: Wraps one attempt's run: gets the run, returns its outcome.
AroundRun = Callable[[Callable[[], "RunOutcome"]], "RunOutcome"]


@dataclass(frozen=True)
class Attempt:
    """One attempt: its size, how it ended, and the cell it ran (with its edits)."""

    size: int
    outcome: RunOutcome
    rewrite: Rewrite
    probe: bool = False  # run as a probe: whatever it trained was put back

    @property
    def fits(self) -> bool:
        """Its steps ran to their end, nothing was stopped, no error was raised or swallowed."""
        outcome = self.outcome
        return (
            outcome.finished
            and outcome.error is None
            and not outcome.fit_cut
            and not outcome.interrupted
        )


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
    #: Whether the namespace held an object before the search (a model it puts back).
    defined_before: Callable[[object], bool] = lambda value: False
    #: The ``fit`` the guard's own calls measure sizes with, from the run that failed or fitted.
    fit_call: FitCall | None = None
    #: The state of the models of earlier cells before the cell first ran, where it was kept.
    before: BeforeTheSearch | None = None


@dataclass(frozen=True)
class Runners:
    """How a retry's attempts run. ``run`` runs a rewritten cell whole, its ``fit`` calls noted
    by a watch, and says how it ended; ``measure`` measures a size of the cell's ``fit`` with
    the guard's own calls; ``hold`` holds the person's Stop while the guard puts a model back."""

    run: Callable[[Rewrite, FitWatch], RunOutcome]
    measure: Callable[[FitCall, int], RunOutcome] | None = None
    hold: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext
    #: Whether the person's Stop came while the guard's own steps held it: no attempt follows.
    stop_requested: Callable[[], bool] = lambda: False


@dataclass
class CellRetry:
    """The retries of one cell, run by ``runners``."""

    setup: RetrySetup
    runners: Runners
    find_max: bool = False
    search: BatchSearch = field(init=False)
    attempts: list[Attempt] = field(default_factory=list)
    notes: list[SearchNote] = field(default_factory=list)
    fit_call: FitCall | None = field(init=False)
    before: BeforeTheSearch = field(init=False)
    #: The person's Stop ended the attempts between two of them (in the guard's own steps).
    stopped: bool = False

    def __post_init__(self) -> None:
        self.fit_call = self.setup.fit_call
        self.search = self._new_search(self.find_max)
        self.before = self.setup.before or BeforeTheSearch()

    @property
    def probing(self) -> bool:
        """Whether a search measures sizes with the guard's own calls."""
        return self.fit_call is not None and self.runners.measure is not None

    @property
    def target(self) -> BatchTarget:
        assert self.setup.finding.target is not None
        return self.setup.finding.target

    def suggestion(self, runs_left: int = 1) -> Step | None:
        """The size the next click would try."""
        return self.search.next_step(runs_left)

    def began_with(self, outcome: RunOutcome) -> None:
        """The cell's own whole run at its size, which fitted: the first row of a search's
        table. Its trial is the setup's first."""
        size = self.setup.current_size
        self.attempts.append(Attempt(size, outcome, self.rewrite(size)))

    def attempt(self, size: int, around: AroundRun | None = None, probe: bool = False) -> Attempt:
        """Measure ``size`` with the guard's own calls (``probe``), or run the cell once with
        it, whole; record it, and remember it when a whole run fits.

        ``around`` wraps a whole run (a card runs it inside its output area).
        """
        self.stopped = False
        rewritten = self.rewrite(size)
        measure = self.runners.measure
        outcome, watch = None, None
        if probe and self.fit_call is not None and measure is not None:
            outcome = measure(self.fit_call, size)
            if _unmeasured(outcome):  # the guard's own fit failed: the cell's run will tell
                why = WhyWholeRuns.MEASURE_FAILED
                note = SearchNote(NoteKind.WHOLE_RUNS, why, str(size), outcome.error or "")
                self.by_whole_runs(note)
                outcome = None
        if outcome is None:
            outcome, watch = self._run_whole(rewritten, around)
        attempt = Attempt(size, outcome, rewritten, outcome.probed)
        self.attempts.append(attempt)
        one_batch = watch.one_batch if watch is not None else size >= self._samples()
        self.search.samples = self.fit_call.samples if self.fit_call is not None else None
        self.search.record(
            Trial(
                size,
                attempt.fits,
                outcome.peak_bytes,
                outcome.fit_fraction,
                one_batch,
                fixed_bytes=outcome.fixed_bytes,
            )
            if outcome.out_of_memory or attempt.fits
            else Trial(size, False)
        )
        if attempt.fits and not attempt.probe:
            self._remember(attempt)
        return attempt

    def _run_whole(
        self, rewritten: Rewrite, around: AroundRun | None
    ) -> tuple[RunOutcome, FitWatch]:
        """Run the cell whole, the models of earlier cells put back as they were before it;
        a run whose ``fit`` did not reach its end did not fit, whatever the cell raised."""
        hold, run = self.runners.hold, self.runners.run
        with hold() as held:
            self.before.restore()
        watch = FitWatch(self.setup.defined_before, self.before)
        if getattr(held, "received", False):  # the person's Stop, as the models were put back
            return RunOutcome(finished=False, interrupted=True), watch
        outcome = around(lambda: run(rewritten, watch)) if around else run(rewritten, watch)
        if outcome.interrupted:
            with hold():
                self.before.restore()  # a run cut short trains nothing that stays
        elif outcome.finished and outcome.error is None and not watch.all_ended:
            outcome = replace(outcome, fit_cut=True)
        self._learn(watch)
        return outcome, watch

    def _learn(self, watch: FitWatch) -> None:
        """What a whole run showed: the ``fit`` to measure sizes with, or why there is none;
        a generator of an earlier cell that its ``fit`` used up."""
        if watch.measurable is not None:
            self.fit_call = watch.measurable
        elif self.fit_call is None or watch.saw_fit:
            self.by_whole_runs(watch.why_not_measured)
        consumed = watch.consumed_input
        if consumed is not None:
            self._note(SearchNote(NoteKind.USED_UP_INPUT, detail=consumed))

    def _samples(self) -> int:
        return self.fit_call.samples if self.fit_call is not None else 1 << 62

    def _note(self, note: SearchNote) -> None:
        if note not in self.notes:
            self.notes.append(note)

    def forget_the_fit(self) -> None:
        """Let go of the model and the data the search measured with, once it is over: a card
        kept for later must not pin them."""
        self.fit_call = None

    def by_whole_runs(self, why: SearchNote) -> None:
        """Sizes cannot be measured with the guard's own calls (``why``): search by whole runs."""
        self.fit_call = None
        self._note(why)

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
        self.stopped = False
        if find_max and not self.search.settings.find_max:
            self.search = self._new_search(True, self.search.trials)
        last: Attempt | None = self.attempts[-1] if self.attempts else None
        whole = probes = 0
        while True:
            if self.runners.stop_requested():
                self.stopped = True
                break
            probing = find_max and self.probing and probes < MAX_PROBES
            step = self.search.next_step(MAX_PROBES - probes + 1 if probing else runs - whole)
            if step is None or (probing and step.size == self.search.largest_fitting):
                step = self._final_run()
                probing = False
            if step is None or (not probing and whole >= runs):
                break
            last = self.attempt(step.size, around, probing)
            whole, probes = whole + (not probing), probes + probing
            report(last)
            if last.outcome.interrupted:
                break
            if not (last.fits or last.outcome.out_of_memory) or self.memory_held(last):
                final = self._final_run() if whole < runs else None
                if final is not None:  # end on a whole run at the largest size that fitted
                    last = self.attempt(final.size, around)
                    report(last)
                break
        self._settle()
        return last

    def _settle(self) -> None:
        """After the attempts: unless the last whole run of the cell fitted (and the model is
        as it left it), the models of earlier cells are put back as they were before the cell,
        not left as a failed or stopped run left them."""
        whole = next((a for a in reversed(self.attempts) if not a.probe), None)
        if whole is None or not whole.fits:
            with self.runners.hold():
                self.before.restore()

    def _final_run(self) -> Step | None:
        """The whole run at the largest size that fitted, unless the last whole run was it
        (the guard's measurements since put back all they trained)."""
        best = self.search.largest_fitting
        whole = next((a for a in reversed(self.attempts) if not a.probe), None)
        if best is None or _ran_whole(whole, best):
            return None
        return Step(best, "the run at the size the search found")

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
        if held is None or not too_much_held(held, self.setup.capacity_bytes):
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
        search.samples = self.fit_call.samples if self.fit_call is not None else None
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


def _unmeasured(outcome: RunOutcome) -> bool:
    """A measurement that failed for another reason than memory, and says nothing of the size."""
    return outcome.finished and outcome.error is not None and not outcome.out_of_memory


def _ran_whole(last: Attempt | None, size: int) -> bool:
    """Whether the last attempt was a whole run at ``size`` that fitted."""
    return last is not None and last.fits and not last.probe and last.size == size
