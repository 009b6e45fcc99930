"""Which batch size to try next, after sizes that fitted and sizes that ran out of memory.

Down: halve from the size that failed, or jump lower when the diagnosis estimates that only a
small share of the batch fits (at most an eighth at once). That is what finds a size that fits.
A search for the largest size with the device's capacity known steps down an eighth instead:
its memory model climbs back from any size that fits in the same two runs, and each halving
above the cliff costs one.

Up, with ``find_max``: the forecast's line of memory in the batch size (:mod:`.forecast`)
proposes the size that keeps half the margin free, and nothing above it is tried. A measurement
of the guard's reads the fixed part of its peak, which gives a line through that one peak (the
smallest proposal of those lines is taken, as peaks vary from run to run). Whole runs of the
cell give peaks only: the line is through the peaks of the two smallest sizes that fitted. One
peak gives a line through the origin, which underestimates when part of the memory does not
grow with the batch (weights, optimizer state), so its proposal fits and gives the second
point; a run already near capacity is followed by one step up instead. In both, the bracket of
the largest size that fitted and the smallest that failed disposes. A proposal that fails
shows memory is not linear here, and the search bisects from then on (a bracket wider than
twofold by ratio, not by size). No step up goes past eight times the largest size that fitted,
whatever the model says. Before any size above the largest that fitted has failed (a search
from a cell that fits), the model proposes, or the size doubles. It stops when the largest size
that fitted is within ``margin`` of a size that failed, or of the model's limit; the last run
is always at the size it returns, so the cell's variables are that run's.

Sizes stay multiples of 8 where the first size was one (of 4, 2, 1 below 160, 80, 40, so that
rounding costs at most 5%), divisors of the effective batch when that must stay the same, and
multiples of the replicas a ``tf.distribute`` strategy splits the batch across.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..protocol import MAX_BATCH_SIZE
from .forecast import MemoryLine

#: The most a single step down divides the size by, whatever the estimate says.
MAX_JUMP_DOWN = 8
#: The step down without an estimate when the memory model will climb back: an eighth, not a
#: half, since the climb from any size that fits takes the same two runs; not a quarter, which
#: from a cell at four times its limit lands on the limit itself and may run out of memory.
CLIMBING_JUMP_DOWN = 8
#: The most a single step up multiplies the largest size that fitted by, whatever the memory
#: model says: a peak that missed part of the memory (another allocator, a device shared with
#: another process) would otherwise send the search thousands of times too high.
MAX_JUMP_UP = 8
#: A bracket whose failing size is more than this many times the fitting one is wide.
WIDE_BRACKET = 2
#: Peaks closer than this share are alike: memory did not grow with the batch.
GROWTH_TOLERANCE = 0.01


@dataclass(frozen=True)
class Trial:
    """One run of the cell at ``size``: whether it fitted, and what memory said."""

    size: int
    fits: bool
    peak_bytes: int | None = None  # the allocator's peak, for a run that fitted
    fit_fraction: float | None = None  # the diagnosis' estimate, for a run that did not
    all_data: bool = False  # one batch held all the training data: a larger one is the same
    #: The forecast's largest batch for a run that did not fit (it errs small).
    foreseen: int | None = None
    #: For a measurement that fitted: the part of its peak that does not grow with the batch.
    fixed_bytes: int | None = None


@dataclass(frozen=True)
class SearchSettings:
    """How to search. ``effective_batch``: sizes must divide it (``--keep-effective-batch``);
    ``replicas``: sizes are multiples of it, the global batch of a ``tf.distribute`` strategy
    being split evenly across its replicas."""

    start: int
    min_batch: int = 1
    margin: float = 0.1
    find_max: bool = False
    capacity_bytes: int | None = None
    remembered: int | None = None
    effective_batch: int | None = None
    #: Replicas the batch is split across (``tf.distribute``): every size is a multiple.
    replicas: int = 1

    def __post_init__(self) -> None:
        if self.start < 1 or self.min_batch < 1 or self.replicas < 1:
            raise ValueError("batch sizes are positive numbers")
        if not 0 < self.margin < 1:
            raise ValueError(f"the margin is a fraction between 0 and 1, not {self.margin:g}")


@dataclass(frozen=True)
class Step:
    """The next size to run, and why, in words for the panel."""

    size: int
    why: str


@dataclass
class BatchSearch:
    """The sizes tried so far; :meth:`next_step` says what to run next (``None``: stop)."""

    settings: SearchSettings
    trials: list[Trial] = field(default_factory=list)
    #: The samples the cell's fit trains on, once known: no size above them is proposed (a
    #: batch larger than the data trains on the data, and "fits" whatever its size).
    samples: int | None = None
    _model_failed: bool = False
    _proposed: set[int] = field(default_factory=set)

    def record(self, trial: Trial) -> None:
        """Add ``trial``. A size that failed overrules sizes at least as large that fitted
        before (a probe that fitted, then a whole run at its size that did not)."""
        if not trial.fits and trial.size in self._proposed:
            self._model_failed = True
        if not trial.fits:
            self.trials = [t for t in self.trials if not (t.fits and t.size >= trial.size)]
        self.trials.append(trial)

    @property
    def largest_fitting(self) -> int | None:
        sizes = [trial.size for trial in self.trials if trial.fits]
        return max(sizes) if sizes else None

    @property
    def smallest_failing(self) -> int | None:
        """The smallest size above the largest that fitted that ran out of memory; before any
        size fitted, the start, which did; ``None`` when every size tried fitted."""
        lo = self.largest_fitting
        failed = [t.size for t in self.trials if not t.fits and t.size > (lo or 0)]
        if failed:
            return min(failed)
        return self.settings.start if lo is None else None

    @property
    def gave_up(self) -> bool:
        """The floor itself ran out of memory: no batch size fits."""
        hi = self.smallest_failing
        return self.largest_fitting is None and hi is not None and hi <= self.settings.min_batch

    @property
    def finished(self) -> bool:
        """The last run fitted at the size the search returns."""
        last = self.trials[-1] if self.trials else None
        return last is not None and last.fits and last.size == self.largest_fitting

    def next_step(self, runs_left: int) -> Step | None:
        """The next size to run, or ``None`` when the search is over or out of runs."""
        if runs_left < 1 or self.gave_up:
            return None
        lo, hi = self.largest_fitting, self.smallest_failing
        if lo is None:
            assert hi is not None
            return self._down(hi)
        if self.finished and (not self.settings.find_max or runs_left < 2):
            return None
        step = self._up(lo, hi) if self.settings.find_max and runs_left >= 2 else None
        if step is None and not self.finished:
            return Step(lo, f"the final run at {lo}, the largest size that fitted")
        return step

    def _down(self, hi: int) -> Step | None:
        remembered = self.settings.remembered
        tried = {trial.size for trial in self.trials}
        if remembered is not None and remembered < hi and remembered not in tried:
            return Step(remembered, f"{remembered} fitted this cell before (remembered)")
        last = next((t for t in reversed(self.trials) if not t.fits), None)
        fraction = last.fit_fraction if last is not None else None
        foreseen = last.foreseen if last is not None else None
        if foreseen is not None and 0 < foreseen < hi:
            target, why = float(foreseen), "the forecast of the largest batch that fits"
        elif fraction is not None and fraction < 0.5:
            target, why = max(hi * fraction, hi / MAX_JUMP_DOWN), "the estimate of what fits"
        elif self._climbs_by_model:
            target, why = hi / CLIMBING_JUMP_DOWN, "an eighth of the size that ran out of memory"
        else:
            target, why = hi / 2, "half the size that ran out of memory"
        size = max(self._round_down(target), self.settings.min_batch)
        if size >= hi:
            return None
        return Step(size, why)

    def _up(self, lo: int, hi: int | None) -> Step | None:
        margin = self.settings.margin
        if hi is not None and hi - lo <= max(margin * hi, self._unit(lo)):
            return None
        if self._uses_the_device(lo) or self._holds_all_data(lo):
            return None
        largest = MAX_BATCH_SIZE if self.samples is None else self._round_down(self.samples)
        if largest <= lo:
            return None  # a larger batch trains on the same samples
        proposal, sure = self._model_proposal()
        if proposal is not None and proposal <= lo:
            if sure:
                return None  # the model puts lo within the margin of the device's capacity
            proposal = lo + self._unit(lo)  # near capacity: one step up
        ceiling = MAX_BATCH_SIZE if hi is None else hi
        if self.samples is not None:
            ceiling = min(ceiling, largest + 1)
        if proposal is not None:
            proposal = min(proposal, largest, self._round_down(lo * MAX_JUMP_UP))
        if proposal is not None and lo < proposal < ceiling:
            self._proposed.add(proposal)
            return Step(proposal, "the memory model's estimate of the largest size that fits")
        if hi is None:
            double = min(2 * lo, largest)
            if double <= lo or self._stopped_growing():
                return None
            return Step(double, f"twice {lo}, which fitted: no size has failed yet")
        # A wide bracket (a model that failed far above the largest fit) is halved in ratio,
        # not in size: halving in size would take a run per power of two to come down.
        wide = hi > WIDE_BRACKET * lo
        middle = self._round_down(math.sqrt(lo * hi) if wide else (lo + hi) / 2)
        if middle <= lo:  # rounding fell back on lo: the next size allowed is between
            middle = self._next_up(lo)
        middle = min(middle, largest)
        if lo < middle < hi:
            return Step(middle, f"between {lo}, which fitted, and {hi}, which did not")
        return None

    @property
    def _climbs_by_model(self) -> bool:
        """The search goes up by the memory model after a size fits: how far below the
        cliff that size is costs no run, each halving above it does."""
        return self.settings.find_max and self.settings.capacity_bytes is not None

    def _holds_all_data(self, size: int) -> bool:
        return any(t.all_data for t in self.trials if t.fits and t.size == size)

    def _stopped_growing(self) -> bool:
        """The two largest sizes that fitted peaked alike: memory no longer grows with the
        batch (a batch larger than the data is the data), so a larger size changes nothing."""
        peaks = sorted((t.size, t.peak_bytes) for t in self.trials if t.fits and t.peak_bytes)
        if len(peaks) < 2 or peaks[-1][0] == peaks[-2][0]:
            return False
        return peaks[-1][1] <= peaks[-2][1] * (1 + GROWTH_TOLERANCE)

    def _uses_the_device(self, size: int) -> bool:
        """The run at ``size`` peaked within half the margin of the device's capacity."""
        capacity = self.settings.capacity_bytes
        peak = next((t.peak_bytes for t in self.trials if t.fits and t.size == size), None)
        if capacity is None or peak is None:
            return False
        return peak >= (1 - self.settings.margin / 2) * capacity

    def _model_proposal(self) -> tuple[int | None, bool]:
        """The model's size to try, and whether the model is sure of its line (``None``,
        ``False``: no model).

        Where a measurement read the fixed part of its peak (what stayed held after it), each such size gives the forecast's line (:meth:`MemoryLine.measured`), and
        the model is the smallest of their largest batches, kept half the margin (the person's
        ``--margin``) below the device's capacity. Peaks of one size vary from run to run by a
        few percent (which chunks the allocator hands out whole depends on the order in which
        tensors are freed); a line through one peak and a fixed part read apart carries that
        variation once, where a line through two peaks multiplies it by their sizes' ratio.

        Otherwise (whole runs of the cell) the line is through peaks, kept half the margin (the
        person's ``--margin``) below the device's capacity. Through one peak it is a line
        through the origin: a lower bound where memory grows linearly, so the size it proposes
        fits and gives the second peak. Through two, it is the line through the two *smallest*
        sizes that fitted: near the capacity the allocator hands out free chunks whole, and the
        peaks of the largest sizes level off (a plateau whose line would send the search past
        the cliff).
        """
        capacity = self.settings.capacity_bytes
        if capacity is None or self._model_failed:
            return None, False
        fitted = [t for t in self.trials if t.fits and t.peak_bytes]
        measured = [
            MemoryLine.measured(t.size, t.peak_bytes, t.fixed_bytes)
            for t in fitted
            if t.peak_bytes and t.fixed_bytes is not None
        ]
        lines = [line for line in measured if line is not None]
        headroom = self.settings.margin / 2
        if lines:
            largest = min(line.largest_batch(capacity, headroom) for line in lines)
            return self._round_down(largest), True
        peaks = {t.size: t.peak_bytes for t in fitted if t.peak_bytes}
        if len(peaks) == 1:
            ((size, peak),) = peaks.items()
            line: MemoryLine | None = MemoryLine(0, peak / size)
        else:
            line = MemoryLine.through({size: peaks[size] for size in sorted(peaks)[:2]})
        if line is None:
            return None, False
        return self._round_down(line.largest_batch(capacity, headroom)), len(peaks) >= 2

    @property
    def _multiple_of_8(self) -> bool:
        return self.settings.start % 8 == 0

    def _unit(self, size: int) -> int:
        """What sizes near ``size`` are multiples of: the granule, and the replicas."""
        return math.lcm(_granule(size, self._multiple_of_8), self.settings.replicas)

    def _next_up(self, size: int) -> int:
        """The smallest size above ``size`` that the rounding allows (a divisor of the
        effective batch where it must stay, a multiple of the unit otherwise)."""
        effective, replicas = self.settings.effective_batch, self.settings.replicas
        if effective is None:
            return size + self._unit(size)
        return next(
            (d for d in range(size + 1, effective + 1) if d % replicas == 0 and effective % d == 0),
            size,
        )

    def _round_down(self, size: float) -> int:
        replicas = self.settings.replicas
        whole = max(math.floor(size), 1)
        effective = self.settings.effective_batch
        if effective is not None:
            divisors = [
                d
                for d in range(replicas, min(whole, effective) + 1, replicas)
                if effective % d == 0
            ]
            return max(divisors, default=replicas)
        unit = self._unit(whole)
        return max(whole // unit * unit, replicas)


def _granule(size: int, multiple_of_8: bool) -> int:
    """The step sizes are rounded to: 8 where the start was a multiple of 8, finer when small."""
    if not multiple_of_8:
        return 1
    return next((g for g, floor in ((8, 160), (4, 80), (2, 40)) if size >= floor), 1)
