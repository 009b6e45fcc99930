"""What watching the compiled forecast's trace costs, side by side in one run.

The compiled forecast (Keras 3 on JAX) lowers the train step at a few batch sizes before the
first step; :mod:`ipy_gpuguard.retry.trace_guard` watches each lowering, on a thread of its own,
so that no code of the person's runs in it. For each model, the lowering and compilation at
batch 32 on the fit's thread unwatched, on a new thread unwatched, and watched (which is on a
new thread), in turn, best of ``--repeats``, and the ratios to the first: what the thread costs
alone, and with the watch.

Run: .venv/bin/python bench/trace_guard.py [--repeats 3]   (about 2 minutes on two cores)
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("KERAS_BACKEND", "jax")
import keras
import numpy as np
from forecast_zoo import ZOO

from ipy_gpuguard.retry import compiled_step, trace_guard

Guard = Callable[[Callable[[], Any], Any], Any]


def unwatched(run: Callable[[], Any], packages: Any) -> Any:
    return run()


def on_a_new_thread(run: Callable[[], Any], packages: Any) -> Any:
    """Unwatched, on a new thread, as the guard's trace runs."""
    returned = []
    thread = threading.Thread(target=lambda: returned.append(run()))
    thread.start()
    thread.join()
    return returned[0]


def seconds(model: Any, x: Any, y: Any, guard: Guard) -> float:
    """One lowering and compilation of the step at batch 32 under ``guard``."""
    compiled_step.without_persons_code = guard
    started = time.perf_counter()
    compiled_step.step_need_bytes(model, x, y, 32)
    return time.perf_counter() - started


def measure(name: str, model: Any, x: Any, y: Any, repeats: int) -> None:
    """Inside the fit, where the guard makes its forecast: the optimizer is built."""

    class Measure(keras.callbacks.Callback):
        def on_train_begin(self, logs: Any = None) -> None:
            seconds(model, x, y, trace_guard.without_persons_code)  # warm both paths
            plain, threaded, watched = [], [], []
            for _ in range(repeats):
                plain.append(seconds(model, x, y, unwatched))
                threaded.append(seconds(model, x, y, on_a_new_thread))
                watched.append(seconds(model, x, y, trace_guard.without_persons_code))
            best_plain, best_threaded, best_watched = min(plain), min(threaded), min(watched)
            print(
                f"{name:<15} unwatched {best_plain:6.2f} s   new thread {best_threaded:6.2f} s "
                f"({best_threaded / best_plain:.2f})   watched {best_watched:6.2f} s "
                f"({best_watched / best_plain:.2f})",
                flush=True,
            )

    model.fit(x, y, batch_size=8, epochs=1, steps_per_epoch=1, verbose=0, callbacks=[Measure()])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    repeats = parser.parse_args().repeats
    for entry in ZOO[:4]:
        model, make = entry.build(entry.spec)
        measure(entry.name, model, *make(16), repeats)
    resnet = keras.applications.ResNet50(weights=None, input_shape=(64, 64, 3), classes=10)
    resnet.compile("adam", "sparse_categorical_crossentropy")
    images, labels = np.zeros((16, 64, 64, 3), "float32"), np.zeros(16, "int32")
    measure("resnet50", resnet, images, labels, repeats)


if __name__ == "__main__":
    main()
