"""What the guard costs, measured side by side in one run.

1. Wall time of the same small Keras fit with and without ``%%gpuguard`` (interleaved runs in one
   IPython shell, median of each; target ratio at most 1.02).
2. CPU time the sampler thread uses per second of wall time, at the default and a fast interval.
3. The cost of ``import ipy_gpuguard`` and of ``%load_ext ipy_gpuguard`` with the modules they
   import, in fresh processes (target under 150 ms, no framework).

Run with ``make bench`` (or ``.venv/bin/python bench/overhead.py``).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("GPUGUARD_SIMULATE", "8GiB")

from IPython.core.interactiveshell import InteractiveShell

from ipy_gpuguard.telemetry import FrameworkAllocators, Sampler, open_backend

SETUP = """
import numpy as np, keras
keras.utils.set_random_seed(0)
x = np.random.default_rng(0).normal(size=(16384, 32)).astype("float32")
y = (x.sum(axis=1) > 0).astype("float32")
model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(256, activation="relu"), keras.layers.Dense(1)])
model.compile(optimizer="adam", loss="mse")
model.fit(x, y, batch_size=256, epochs=1, verbose=0)  # warm up: tracing, first allocations
"""
FIT = "history = model.fit(x, y, batch_size=64, epochs=3, verbose=0)\n"


def fit_ratio(rounds: int = 9) -> tuple[float, float, float]:
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "ipy_gpuguard")
    assert shell.run_cell(SETUP).success
    plain, guarded = [], []
    pair = [(FIT, plain), ("%%gpuguard\n" + FIT, guarded)]
    for _ in range(rounds):
        pair.reverse()  # alternate which goes first, so order effects cancel
        for cell, times in pair:
            start = time.perf_counter()
            assert shell.run_cell(cell).success
            times.append(time.perf_counter() - start)
    return (
        statistics.median(plain),
        statistics.median(guarded),
        statistics.median(guarded) / statistics.median(plain),
    )


def sampler_cpu_per_wall_second(interval_s: float, seconds: float = 5.0) -> float:
    """The sampler thread's own CPU clock (``time.thread_time``, read on that thread) per wall second."""
    backend = open_backend(os.environ["GPUGUARD_SIMULATE"])
    stamps: list[tuple[float, float]] = []
    sampler = Sampler(
        backend,
        FrameworkAllocators("CPU"),
        [0],
        interval_s,
        listener=lambda _sample: stamps.append((time.thread_time(), time.perf_counter())),
    )
    sampler.start()
    time.sleep(seconds)
    sampler.stop()
    (cpu_first, wall_first), (cpu_last, wall_last) = stamps[0], stamps[-1]
    return (cpu_last - cpu_first) / (wall_last - wall_first)


def import_cost_ms(statement: str, repeats: int = 5) -> tuple[float, str]:
    probe = (
        "import time, sys\nimport IPython\nfrom IPython.core.interactiveshell import InteractiveShell\n"
        "ip = InteractiveShell.instance()\nstart = time.perf_counter()\n"
        f"{statement}\n"
        "elapsed = (time.perf_counter() - start) * 1000\n"
        "heavy = [m for m in ('tensorflow', 'keras', 'torch', 'jax', 'pynvml') if m in sys.modules]\n"
        "print(elapsed, ','.join(heavy) or 'none')"
    )
    runs = []
    for _ in range(repeats):
        out = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True
        ).stdout.split()
        runs.append((float(out[0]), out[1]))
    return statistics.median(ms for ms, _ in runs), runs[0][1]


def main() -> None:
    plain, guarded, ratio = fit_ratio()
    print(
        f"Keras fit, median of 9 interleaved runs: plain {plain:.3f} s, guarded {guarded:.3f} s, ratio {ratio:.3f} (target <= 1.02)"
    )
    for interval in (0.5, 0.1):
        share = sampler_cpu_per_wall_second(interval)
        print(
            f"sampler CPU per wall second at --interval {interval}: {share * 1000:.2f} ms/s ({share:.2%} of a core)"
        )
    for label, statement in (
        ("import ipy_gpuguard", "import ipy_gpuguard"),
        ("%load_ext ipy_gpuguard", "ip.run_line_magic('load_ext', 'ipy_gpuguard')"),
    ):
        ms, heavy = import_cost_ms(statement)
        print(
            f"{label}: {ms:.1f} ms (median of 5 fresh processes, IPython already imported); frameworks imported: {heavy}"
        )


if __name__ == "__main__":
    main()
