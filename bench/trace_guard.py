"""What watching the compiled forecast's trace costs, side by side in one run.

The compiled forecast (Keras 3 on JAX) lowers the train step at a few batch sizes before the
first step; :mod:`ipy_gpuguard.retry.trace_guard` watches each lowering with a profile function
so that no code of the person's runs in it. For each model, the lowering and compilation at
batch 32, unwatched and watched, alternately, best of ``--repeats``, and their ratio.

Run: .venv/bin/python bench/trace_guard.py [--repeats 3]   (about 2 minutes on two cores)
"""

from __future__ import annotations

import argparse
import os
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
            plain, watched = [], []
            for _ in range(repeats):
                plain.append(seconds(model, x, y, unwatched))
                watched.append(seconds(model, x, y, trace_guard.without_persons_code))
            best_plain, best_watched = min(plain), min(watched)
            print(
                f"{name:<15} unwatched {best_plain:6.2f} s   watched {best_watched:6.2f} s   "
                f"ratio {best_watched / best_plain:.2f}",
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
