"""The compiled forecast on Keras 3 on JAX against XLA's own largest batch (issue 37).

On JAX the forecast is made before the first step, from XLA's analysis of the compiled train
step at the cell's batch and at half of it (:func:`~ipy_gpuguard.retry.compiled_step.
step_need_bytes`), a line through the two kept :data:`~ipy_gpuguard.retry.forecast.HEADROOM`
below the device, checked at the largest batch it gives (:func:`~ipy_gpuguard.retry.forecast.
compiled_line`). Here, for each model of both zoos, T is the largest batch whose compiled step
XLA says needs no more than the capacity (bisection over compiled sizes, nothing run), and the
forecast is the guard's from a cell at T//4: its error against T is what the line and the
headroom cost, not an allocator's behaviour (JAX on the CPU has no allocator limit to fail
against; on a GPU, the device is the truth: see the closing note of issue 37).

Run: KERAS_BACKEND=jax .venv/bin/python bench/forecast_jax.py [--limit-mb 512] [--models mlp,cnn]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable

os.environ.setdefault("KERAS_BACKEND", "jax")

import keras
from forecast import error_summary, held_out
from forecast_truth import MODELS, by_name

from ipy_gpuguard.retry.compiled_step import step_need_bytes
from ipy_gpuguard.retry.forecast import MemoryLine, compiled_line


def largest_within(need: Callable[[int], int], capacity: int) -> int:
    """The largest batch whose need is at most ``capacity``: a guess from the line through two
    small sizes, then bisection to one sample."""
    small, large = 16, 32
    line = MemoryLine.through({small: need(small), large: need(large)})
    assert line is not None
    guess = max(int((capacity - line.fixed_bytes) / line.per_sample_bytes), large)
    lo, hi = (guess, None) if need(guess) <= capacity else (large, guess)
    while hi is None:
        step = int(lo * 1.1) + 1
        lo, hi = (step, None) if need(step) <= capacity else (lo, step)
    while hi - lo > 1:
        middle = (lo + hi) // 2
        lo, hi = (middle, hi) if need(middle) <= capacity else (lo, middle)
    return lo


def row(name: str, capacity: int) -> tuple[str, int, int, float]:
    keras.utils.set_random_seed(0)
    entry = by_name(name)
    model, make_data = entry.build(entry.spec)
    x, y = make_data(64)
    model.fit(x, y, batch_size=2, epochs=1, steps_per_epoch=1, verbose=0)  # builds the state
    needs: dict[int, int] = {}

    def need(batch: int) -> int:
        if batch not in needs:
            needs[batch] = step_need_bytes(model, x, y, batch)
        return needs[batch]

    truth = largest_within(need, capacity)
    made = compiled_line(need, truth // 4, capacity)
    forecast = 0 if made is None else made[1]
    return entry.family, truth, forecast, (forecast - truth) / truth


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit-mb", type=int, default=512)
    parser.add_argument("--models", type=lambda s: s.split(","), default=[m.name for m in MODELS])
    args = parser.parse_args(argv)
    capacity = args.limit_mb * 2**20
    started = time.perf_counter()
    print(f"Keras {keras.__version__} on {keras.backend.backend()}, capacity {args.limit_mb} MiB")
    print("| model | family | T (XLA) | forecast from T/4 | error | above T |")
    print("|---|---|---|---|---|---|")
    errors: dict[bool, list[float]] = {True: [], False: []}
    for name in args.models:
        family, truth, forecast, error = row(name, capacity)
        errors[held_out(name)].append(error)
        mark = " (held out)" if held_out(name) else ""
        above = "yes" if error > 0 else "no"
        print(f"| {name}{mark} | {family} | {truth} | {forecast} | {error:+.1%} | {above} |")
    for is_held, label in ((False, "tuned on"), (True, "held out")):
        if errors[is_held]:
            print(error_summary(label, errors[is_held]))
    print(f"{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
