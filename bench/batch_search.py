"""Batch-size search strategies on memory cliffs: trials needed and the size found.

Each of 200 thresholds T (log-uniform between 8 and 4096, seeded) is a device on which a batch
of size b fits when b <= T and runs out of memory above. Every strategy starts at 8192. A trial
is one run of the cell; a strategy whose last trial failed runs its answer once more, since the
cell's variables must come from a run at the size it returns. Memory grows with the batch as
F + a * b**p: p = 1 ("linear"), or p between 0.85 and 1.15 ("curved"); F, the memory that does
not grow with the batch, is between 0 and 60% of the device. Only ours reads memory (the
allocator peak of the runs that fitted, and the device's capacity); the others see fit / no fit.

Run: .venv/bin/python bench/batch_search.py; with ``--keras``, the searches side by side on a
real Keras model instead (:mod:`keras_search`: probes, whole runs, Lightning, accelerate, and the
time to a finished training), ``--quick`` for two thresholds; ``--keras --memory``, the guard's
search fed by TensorFlow's allocator as on a GPU (:mod:`keras_memory_search`).
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from ipy_gpuguard.retry.search import BatchSearch, SearchSettings, Trial

START = 8192
CAPACITY = 16 * 2**30
COUNT = 200


@dataclass(frozen=True)
class Device:
    threshold: int
    fixed_bytes: float
    per_sample: float
    power: float

    def peak(self, size: int) -> float:
        return self.fixed_bytes + self.per_sample * size**self.power

    def fits(self, size: int) -> bool:
        return size <= self.threshold


def device(rng: random.Random, threshold: int, curved: bool) -> Device:
    power = rng.uniform(0.85, 1.15) if curved else 1.0
    fixed = rng.uniform(0.0, 0.6) * CAPACITY
    # The cliff lies halfway between T and T + 1, so the peak at T is under capacity.
    per_sample = (CAPACITY - fixed) / (threshold + 0.5) ** power
    return Device(threshold, fixed, per_sample, power)


Strategy = Callable[[Device], tuple[int, int]]  # -> (trials, size found)


def ours(with_memory: bool) -> Strategy:
    def run(dev: Device) -> tuple[int, int]:
        capacity = CAPACITY if with_memory else None
        search = BatchSearch(SearchSettings(START, find_max=True, capacity_bytes=capacity))
        search.record(Trial(START, dev.fits(START)))
        while (step := search.next_step(runs_left=64)) is not None:
            fits = dev.fits(step.size)
            search.record(Trial(step.size, fits, int(dev.peak(step.size)) if fits else None))
        assert search.finished
        return len(search.trials), search.largest_fitting or 0

    return run


def halving(dev: Device) -> tuple[int, int]:
    size, trials = START, 1
    while not dev.fits(size):
        size, trials = size // 2, trials + 1
    return trials, size


def accelerate(dev: Device) -> tuple[int, int]:
    """``find_executable_batch_size`` with its ×0.9 back-off after each failure."""
    size, trials = START, 1
    while not dev.fits(size):
        size, trials = int(size * 0.9), trials + 1
    return trials, size


def lightning_power(dev: Device) -> tuple[int, int]:
    """``BatchSizeFinder(mode="power")``: halve after a failure, double after a success, stop
    at the first failure after a success; then the real run at the last size that fitted."""
    size, trials, last_fit = START, 0, None
    while True:
        trials += 1
        if dev.fits(size):
            last_fit, size = size, size * 2
        else:
            if last_fit is not None:
                return trials + 1, last_fit
            size //= 2


def lightning_binsearch(dev: Device) -> tuple[int, int]:
    """``BatchSizeFinder(mode="binsearch")``: bisect between 1 and the size that failed, until
    the two differ by 1; then the real run at the last size that fitted."""
    low, high, size, trials = 1, None, START, 0
    while True:
        trials += 1
        if dev.fits(size):
            low = size
            if high is None:
                size *= 2
                continue
            if high - low <= 1:
                return trials, low
        else:
            high = size
            if high - low <= 1:
                return trials + 1, low
        size = (high + low) // 2


STRATEGIES: dict[str, Strategy] = {
    "ours (memory model + bracket)": ours(with_memory=True),
    "ours without telemetry (bisect)": ours(with_memory=False),
    "halving": halving,
    "accelerate (x0.9 back-off)": accelerate,
    "Lightning power": lightning_power,
    "Lightning binsearch": lightning_binsearch,
}


def main() -> None:
    rng = random.Random(20261122)
    thresholds = [round(math.exp(rng.uniform(math.log(8), math.log(4096)))) for _ in range(COUNT)]
    for curved in (False, True):
        devices = [device(rng, threshold, curved) for threshold in thresholds]
        print(
            f"\n{'curved' if curved else 'linear'} memory, {COUNT} thresholds 8..4096, start {START}"
        )
        print(
            f"{'strategy':34} {'mean trials':>11} {'worst excess':>12} "
            f"{'mean found/T':>12} {'min found/T':>11} {'met both':>8}"
        )
        for name, strategy in STRATEGIES.items():
            trials, ratios, excess, met = [], [], [], 0
            for dev in devices:
                count, found = strategy(dev)
                assert dev.fits(found), (name, dev, found)
                budget = math.log2(START / dev.threshold) + 4
                trials.append(count)
                ratios.append(found / dev.threshold)
                excess.append(count - budget)
                met += count <= budget and found >= 0.85 * dev.threshold
            print(
                f"{name:34} {statistics.mean(trials):11.2f} {max(excess):+12.2f} "
                f"{statistics.mean(ratios):12.3f} {min(ratios):11.3f} {met:>4}/{COUNT}"
            )
    print("\nworst excess: trials minus the target log2(start/T) + 4, at the worst threshold")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keras", action="store_true", help="real Keras searches side by side")
    parser.add_argument("--quick", action="store_true", help="with --keras: T 100 and 1000 only")
    parser.add_argument("--limits", help="with --keras: the thresholds T, like 100,1000")
    parser.add_argument("--seconds", type=float, default=10.0, help="one training at T, at least")
    parser.add_argument(
        "--memory", action="store_true", help="with --keras: the search fed by the allocator"
    )
    args = parser.parse_args()
    if args.keras and args.memory:
        import keras_memory_search

        limits = [int(limit) for limit in args.limits.split(",")] if args.limits else None
        keras_memory_search.run(limits or [37, 100, 333, 1000, 3000])
    elif args.keras:
        import keras_search

        limits = [int(limit) for limit in args.limits.split(",")] if args.limits else None
        keras_search.run(
            limits or ([100, 1000] if args.quick else [37, 100, 333, 1000, 3000]),
            lambda limit: [1024, 65536, max(limit // 4, 1)],
            args.seconds,
        )
    else:
        main()
