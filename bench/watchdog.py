"""What the watchdog costs and how fast it notices, measured side by side in one run.

1. Time per step of the same small Keras ``fit`` without and with the heartbeat callback the
   guard attaches (interleaved rounds in one process, median of each; target: at most 20 us
   added per step). A CPU step varies by more than that from round to round, so the added cost
   is also measured alone: Keras' callback dispatch of one step with and without the callback,
   and one ``heartbeat()`` call.
2. Stall detection latency over 20 trials: a loop reports steps, then stops; the time from its
   last step to the watchdog's finding, against the limit (``--timeout``).

Run with ``make bench`` (or ``.venv/bin/python bench/watchdog.py``).
"""

from __future__ import annotations

import os
import statistics
import time
import timeit
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np

from ipy_gpuguard.watchdog import KerasHooks, StallLimits, StepRecorder, Watchdog, set_active
from ipy_gpuguard.watchdog.keras_hooks import heartbeat_callback_class
from ipy_gpuguard.watchdog.progress import heartbeat
from ipy_gpuguard.watchdog.stacks import StackReport

SAMPLES, BATCH = 16384, 32  # 512 steps an epoch


def step_times(rounds: int = 9) -> tuple[float, float]:
    """Median seconds per step of ``fit``: without, then with the heartbeat callback."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(SAMPLES, 32)).astype("float32")
    y = rng.normal(size=(SAMPLES, 1)).astype("float32")
    model = keras.Sequential(
        [keras.Input((32,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(1)]
    )
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)  # warm up: tracing
    steps = SAMPLES // BATCH
    plain: list[float] = []
    guarded: list[float] = []
    recorder = StepRecorder()
    hooks = KerasHooks(recorder)
    for round_ in range(rounds):
        order = [(False, plain), (True, guarded)]
        if round_ % 2:
            order.reverse()  # alternate which goes first, so order effects cancel
        for with_heartbeat, times in order:
            if with_heartbeat:
                hooks.attach_new()
            start = time.perf_counter()
            model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, shuffle=False)
            times.append((time.perf_counter() - start) / steps)
            hooks.detach()
    assert recorder.steps == rounds * steps, "the heartbeat did not see every step"
    return statistics.median(plain), statistics.median(guarded)


def dispatch_s(calls: int = 200_000) -> tuple[float, float]:
    """Keras' per-step callback dispatch (batch begin and end) without and with the heartbeat.

    The added cost in isolation, free of the step's own noise of hundreds of microseconds.
    """
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    heartbeat_class = heartbeat_callback_class(keras.callbacks.Callback)
    logs = {"loss": 0.5}
    results = []
    for callbacks in ([], [heartbeat_class(StepRecorder())]):
        callback_list = keras.callbacks.CallbackList(callbacks, add_history=True, model=model)

        def one_step(callback_list: Any = callback_list) -> None:
            callback_list.on_train_batch_begin(0)
            callback_list.on_train_batch_end(0, logs)

        results.append(min(timeit.repeat(one_step, number=calls, repeat=5)) / calls)
    return results[0], results[1]


def heartbeat_call_s(calls: int = 1_000_000) -> tuple[float, float]:
    """One ``heartbeat()`` call: outside a guarded cell, and feeding a recorder."""
    idle = timeit.timeit(heartbeat, number=calls) / calls
    set_active(StepRecorder())
    try:
        active = timeit.timeit(heartbeat, number=calls) / calls
    finally:
        set_active(None)
    return idle, active


def detection_latencies(
    trials: int = 20, limit_s: float = 0.5, interval_s: float = 0.5
) -> list[float]:
    """Seconds from the last step to the finding, for a loop that stops stepping."""
    latencies = []
    for _ in range(trials):
        recorder = StepRecorder()
        dog = Watchdog(
            recorder,
            StallLimits(timeout_s=limit_s),
            interval_s,
            interrupt_on_stall=False,
            capture_stacks=lambda: StackReport(()),
        )
        dog.start()
        try:
            for _ in range(5):
                time.sleep(0.01)
                recorder.step()
            while dog.stall is None:  # the loop is stuck
                time.sleep(0.01)
            latencies.append(dog.stall.detected_at - dog.stall.started_at)
        finally:
            dog.stop()
    return latencies


def main() -> None:
    plain, guarded = step_times()
    added_us = (guarded - plain) * 1e6
    print(
        "1. Time per step of a Keras fit (batch 32, 512 steps an epoch, median of 9 rounds each):"
    )
    print(f"   without the heartbeat callback  {plain * 1e6:8.1f} us")
    print(f"   with the heartbeat callback     {guarded * 1e6:8.1f} us")
    print(
        f"   added per step                  {added_us:8.1f} us (target <= 20 us); ratio {guarded / plain:.3f}"
    )
    without, with_ = dispatch_s()
    print(
        f"   Keras' callback dispatch per step: {without * 1e6:.2f} us without, "
        f"{with_ * 1e6:.2f} us with the heartbeat: {(with_ - without) * 1e6:.2f} us added"
    )
    idle, active = heartbeat_call_s()
    print(
        f"   one heartbeat() call: {idle * 1e9:.0f} ns outside a guarded cell, {active * 1e9:.0f} ns inside"
    )
    limit_s, interval_s = 0.5, 0.5
    latencies = detection_latencies(limit_s=limit_s, interval_s=interval_s)
    over = [latency - limit_s for latency in latencies]
    print(
        f"2. Stall detection over {len(latencies)} trials (limit {limit_s} s, look interval {interval_s} s):"
    )
    print(
        f"   last step to finding: median {statistics.median(latencies):.3f} s, "
        f"max {max(latencies):.3f} s; past the limit: median {statistics.median(over) * 1000:.1f} ms, "
        f"max {max(over) * 1000:.1f} ms (bound: the limit plus one interval)"
    )


if __name__ == "__main__":
    main()
