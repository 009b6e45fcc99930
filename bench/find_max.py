"""``%%gpuguard --find-max`` in a real IPython shell, timed beside one plain training (issue 34).

A realistic cell as a new user writes it (issue 34's): a model built in an earlier cell (three
256-unit layers behind a layer that asks TensorFlow's allocator for terabytes above ``T`` = 37
samples, a real out-of-memory error on the CPU), 20,000 samples, five epochs, ``BATCH`` set in the
guarded cell. For each start (1024, far above ``T``; ``T/2``, a size that fits and must climb),
the search runs from a freshly built model; then the same cell runs unguarded at the size it
found, on a fresh model, three times. Printed side by side: the size found / ``T``, the model's
optimizer steps against one run's, and the search's wall time / the median plain training.

Run: .venv/bin/python bench/find_max.py [--epochs 5] [--limit 37]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")  # an impossible allocation fails at once
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("GPUGUARD_SIMULATE", "8GiB")

from IPython.core.interactiveshell import InteractiveShell

SAMPLES = 20_000

MODEL = """
import keras
import numpy as np

class MemoryHog(keras.layers.Layer):
    def __init__(self, limit, **kwargs):
        super().__init__(**kwargs)
        self.limit = limit
        self.seed = keras.random.SeedGenerator(1)

    def call(self, x):
        extra = keras.ops.maximum(keras.ops.shape(x)[0] - self.limit, 0)
        noise = keras.random.uniform((extra, 2**20, 2**20), seed=self.seed)
        return x + keras.ops.sum(noise) * 0

keras.utils.set_random_seed(0)
model = keras.Sequential(
    [keras.Input((64,)), MemoryHog({limit})]
    + [keras.layers.Dense(256, activation="relu") for _ in range(3)]
    + [keras.layers.Dense(1)]
)
model.compile(optimizer="adam", loss="mse", jit_compile=False)
rng = np.random.default_rng(0)
x = rng.random(({samples}, 64), "float32")
y = rng.random(({samples}, 1), "float32")
"""

CELL = """BATCH = {start}
model.fit(x, y, batch_size=BATCH, epochs={epochs}, shuffle=False, verbose=0)
"""


def timed(shell: InteractiveShell, code: str) -> float:
    started = time.perf_counter()
    result = shell.run_cell(code, store_history=False)
    elapsed = time.perf_counter() - started
    assert result.error_in_exec is None, result.error_in_exec
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--limit", type=int, default=37)
    args = parser.parse_args()
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "ipy_gpuguard")
    shell.run_line_magic("config", "GPUGuard.batch_memory = ''")  # each search from nothing
    model = MODEL.format(limit=args.limit, samples=SAMPLES)
    print(f"T = {args.limit}, {SAMPLES} samples, {args.epochs} epochs, Keras on TensorFlow (CPU)")
    print(f"{'start':>6} {'found/T':>8} {'steps/one run':>14} {'search / one training':>22}")
    for start in (1024, args.limit // 2):
        shell.run_cell(model, store_history=False)
        cell = CELL.format(start=start, epochs=args.epochs)
        sink = open(os.devnull, "w")  # noqa: SIM115
        stdout, sys.stdout = sys.stdout, sink
        try:
            searched = timed(shell, "%%gpuguard --find-max\n" + cell)
        finally:
            sys.stdout = stdout
        found = int(shell.user_ns["BATCH"])
        steps = int(shell.user_ns["model"].optimizer.iterations)
        one_run = -(-SAMPLES // found) * args.epochs
        plain = []
        for _ in range(3):
            shell.run_cell(model, store_history=False)
            plain.append(timed(shell, CELL.format(start=found, epochs=args.epochs)))
        ratio = searched / statistics.median(plain)
        print(f"{start:>6} {found / args.limit:8.2f} {steps:>7}/{one_run:<6} {ratio:22.2f}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent.parent))
    main()
