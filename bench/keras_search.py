"""Largest-batch searches side by side on one real Keras model with a memory cliff (issue 23).

The model is a few 256-unit layers and a layer that asks for terabytes once the batch exceeds T
(a real TensorFlow allocator error on CPU, see DESIGN.md). Each strategy starts at the same size
and must end with the model trained once at the size it found:

- probes: the guard's search (``BatchSearch``), each size measured by the guard's own training
  calls (``Measurer``: a ``fit`` of 1 + 3 steps on the model and data, its state put back),
  then one training;
- whole runs: the same search, each size a whole training (what the guard did before probes);
- Lightning: ``BatchSizeFinder``'s power then binary search, 3 steps per trial, weights put back
  at the end, then one training (re-implemented from ``lightning/pytorch/tuner/batch_size_scaling.py``);
- accelerate: ``find_executable_batch_size``, whole trainings, ×0.9 after each failure.

For each: the size found / T, the trials, and the wall time to a finished training at that size
divided by one plain training at that size, measured in the same run. The training's epochs are
set so that one plain training at T takes at least ``--seconds``.

Run: .venv/bin/python bench/batch_search.py --keras [--quick]
"""

from __future__ import annotations

import contextlib
import math
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")  # an impossible allocation fails at once
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras
import numpy as np

from ipy_gpuguard.retry.measure import FitCall, Measurer, PeakReader
from ipy_gpuguard.retry.outcome import RunOutcome
from ipy_gpuguard.retry.search import BatchSearch, SearchSettings, Trial
from ipy_gpuguard.retry.state import KeptState
from ipy_gpuguard.shell.reclaim import free_failure_memory

SAMPLES = 20_000
#: Plain trainings whose median is the baseline of a size.
BASELINE_RUNS = 3
OOM = Exception  # TensorFlow's ResourceExhaustedError, without importing TensorFlow's names


class MemoryHog(keras.layers.Layer):
    """Nothing below ``limit`` samples; above, a ``[batch - limit, 2**20, 2**20]`` tensor."""

    def __init__(self, limit: int, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.limit = limit
        self.seed = keras.random.SeedGenerator(1)

    def call(self, x: object) -> object:
        extra = keras.ops.maximum(keras.ops.shape(x)[0] - self.limit, 0)
        noise = keras.random.uniform((extra, 2**20, 2**20), seed=self.seed)
        return x + keras.ops.sum(noise) * 0


@dataclass
class Cell:
    """The person's model (built in an earlier cell) and their training at a batch size."""

    limit: int
    epochs: int = 1

    def __post_init__(self) -> None:
        # Each model from a clean slate: models and traced functions of earlier rows slowed
        # later ones (a probe search from T/4 measured 13 s alone, 60 s late in a run).
        keras.backend.clear_session()
        keras.utils.set_random_seed(0)
        layers = [keras.layers.Dense(256, activation="relu") for _ in range(3)]
        self.model = keras.Sequential(
            [keras.Input((64,)), self.memory_layer(), *layers, keras.layers.Dense(1)]
        )
        self.model.compile(optimizer="adam", loss="mse", jit_compile=False)
        rng = np.random.default_rng(0)
        self.x = rng.random((SAMPLES, 64), "float32")
        self.y = rng.random((SAMPLES, 1), "float32")

    def memory_layer(self) -> keras.layers.Layer:
        """What makes the cliff: nothing below ``limit`` samples, terabytes above."""
        return MemoryHog(self.limit)

    def fits(self, size: int, steps: int | None = None) -> bool:
        """Train at ``size`` (``steps`` steps, or the whole training); whether memory sufficed."""
        try:
            self.model.fit(
                self.x,
                self.y,
                batch_size=size,
                epochs=1 if steps else self.epochs,
                steps_per_epoch=steps,
                verbose=0,
            )
        except OOM as error:
            if "ResourceExhausted" not in type(error).__name__:
                raise
            return False
        return True

    def probe(self, size: int) -> bool:
        """The guard's measurement: its own ``fit`` of a few steps, everything put back."""
        call = FitCall(self.model, self.x, self.y, None, None, None, len(self.x))
        return MEASURER.measure(call, size).error is None


def _judge(error: BaseException, ran: RunOutcome) -> RunOutcome:
    """A failure as the guard judges it (here: TensorFlow's allocator running out), its memory
    freed as the guard frees a measurement's."""
    if "ResourceExhausted" not in type(error).__name__:
        raise error
    free_failure_memory(error, lambda: None, None, thorough=False)
    return replace(ran, error=type(error).__name__, out_of_memory=True)


#: The guard's measurer: its training calls use the model's own step functions.
MEASURER = Measurer(
    PeakReader(lambda: None, lambda: None, lambda: None),
    _judge,
    contextlib.nullcontext,
    contextlib.nullcontext,
)


Strategy = Callable[[Cell, int], tuple[int, int]]  # -> (trials, size trained at)


def ours(by_probes: bool) -> Strategy:
    def run(cell: Cell, start: int) -> tuple[int, int]:
        search = BatchSearch(SearchSettings(start, find_max=True))
        trial = cell.probe if by_probes else cell.fits
        search.record(Trial(start, trial(start)))
        while (step := search.next_step(runs_left=64)) is not None:
            if by_probes and step.size == search.largest_fitting:
                break  # the search is over: train once, below
            search.record(Trial(step.size, trial(step.size)))
        found = search.largest_fitting
        assert found is not None
        if by_probes or not search.finished:
            assert cell.fits(found)
        return len(search.trials), found

    return run


def lightning(cell: Cell, start: int) -> tuple[int, int]:
    """Power scaling to the first failure, then binary search, 3 steps a trial; the weights
    are saved first and put back after, as Lightning restores its checkpoint."""
    kept = KeptState.of([cell.model])
    low, high, size, trials = 1, None, start, 0
    while True:
        trials += 1
        if cell.fits(size, steps=3):
            low = size
            if high is None:
                size *= 2
                continue
            if high - low <= 1:
                break
        else:
            high = size
            if high - low <= 1:
                break
        size = (high + low) // 2
    kept.restore()
    assert cell.fits(low)
    return trials, low


def accelerate(cell: Cell, start: int) -> tuple[int, int]:
    """``find_executable_batch_size``: the whole training, ×0.9 after each failure."""
    size, trials = start, 1
    while not cell.fits(size):
        size, trials = int(size * 0.9), trials + 1
    return trials, size


STRATEGIES: dict[str, Strategy] = {
    "probes (ours)": ours(by_probes=True),
    "whole runs (before)": ours(by_probes=False),
    "Lightning (3-step trials)": lightning,
    "accelerate (x0.9)": accelerate,
}


def plain_seconds(cell: Cell, size: int) -> float:
    started = time.perf_counter()
    assert cell.fits(size)
    return time.perf_counter() - started


def one_training(limit: int, epochs: int, size: int, known: dict[int, float]) -> float:
    """One plain training at ``size`` of a freshly built model, as the person's cell runs it
    (its tracing included): the median of three, measured once per size."""
    if size not in known:
        known[size] = statistics.median(
            plain_seconds(Cell(limit, epochs), size) for _ in range(BASELINE_RUNS)
        )
    return known[size]


def run(thresholds: list[int], starts: Callable[[int], list[int]], seconds: float) -> None:
    print(
        f"{'T':>5} {'start':>6} {'strategy':27} {'found/T':>8} {'trials':>6} {'budget':>6} "
        f"{'time / one training':>19}"
    )
    for limit in thresholds:
        cell = Cell(limit)
        plain_seconds(cell, limit)  # the first traces; the second measures an epoch
        epoch = plain_seconds(cell, limit)
        epochs = max(1, math.ceil(seconds / epoch))
        known: dict[int, float] = {}
        for start in starts(limit):
            for name, strategy in STRATEGIES.items():
                cell = Cell(limit, epochs)
                started = time.perf_counter()
                trials, found = strategy(cell, start)
                elapsed = time.perf_counter() - started
                one = one_training(limit, epochs, found, known)
                budget = max(math.log2(start / limit), 0) + 4
                print(
                    f"{limit:>5} {start:>6} {name:27} {found / limit:8.2f} {trials:>6} "
                    f"{budget:6.1f} {elapsed / one:19.2f}"
                )
