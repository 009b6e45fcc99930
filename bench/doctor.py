"""What ``doctor`` costs beyond the one thing it cannot avoid: importing TensorFlow.

Side by side in one run, interleaved rounds, median of each, each a fresh process:

1. ``python -c "import tensorflow; list_physical_devices('GPU'); get_build_info()"``, what a
   person types to learn the same about TensorFlow;
2. ``python -m ipy_gpuguard doctor --json``, every check;
3. every check without TensorFlow's (the checks that read the driver, the libraries,
   metadata and settings), in this process, to show what the rest costs.

Run with ``make bench`` (or ``.venv/bin/python bench/doctor.py``).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

from ipy_gpuguard.doctor import CHECKS, run_doctor

ROUNDS = 5
TENSORFLOW_ALONE = (
    "import tensorflow as tf; tf.config.list_physical_devices('GPU'); tf.sysconfig.get_build_info()"
)
NEEDS_TENSORFLOW = {"tensorflow_build", "cuda_libraries", "gpus", "tensorflow_gpu", "driver"}


def seconds(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, capture_output=True, check=False)
    return time.perf_counter() - started


def main() -> None:
    alone, doctor, rest = [], [], []
    without_tensorflow = [check for check in CHECKS if check[0] not in NEEDS_TENSORFLOW]
    for _ in range(ROUNDS):
        alone.append(seconds([sys.executable, "-c", TENSORFLOW_ALONE]))
        doctor.append(seconds([sys.executable, "-m", "ipy_gpuguard", "doctor", "--json"]))
        rest.append(run_doctor(checks=without_tensorflow).seconds)
    a, d, r = (statistics.median(values) for values in (alone, doctor, rest))
    print(f"rounds: {ROUNDS}, median of each, fresh processes")
    print(f"import TensorFlow and list its GPUs and build:  {a:6.2f} s")
    print(f"python -m ipy_gpuguard doctor --json:           {d:6.2f} s   ratio {d / a:.2f}")
    print(f"the checks that need no TensorFlow (in-process): {r * 1000:6.1f} ms")


if __name__ == "__main__":
    main()
