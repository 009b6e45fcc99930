"""The native-log tee on 40 MB of progress output rewritten with ``\\r`` (no newline at all),
against the same writes without the tee, side by side in one run.

    .venv/bin/python bench/native_log.py
"""

from __future__ import annotations

import os
import statistics
import time

from ipy_gpuguard.shell.native_log import NativeLogTee

CHUNK = b"\r 1200/5000 [=====>........................] - ETA: 1:02 - loss: 0.4312" * 100
TOTAL_BYTES = 40 * 2**20
ROUNDS = 3


def write_all() -> float:
    start = time.perf_counter()
    for _ in range(TOTAL_BYTES // len(CHUNK)):
        os.write(2, CHUNK)
    return time.perf_counter() - start


def through_tee() -> float:
    tee = NativeLogTee()
    tee.start()
    start = time.perf_counter()
    for _ in range(TOTAL_BYTES // len(CHUNK)):
        os.write(2, CHUNK)
    tee.stop()  # includes copying what is left
    return time.perf_counter() - start


def main() -> None:
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    try:
        plain, teed = [], []
        for _ in range(ROUNDS):  # alternate, so that neither always runs first
            plain.append(write_all())
            teed.append(through_tee())
    finally:
        os.dup2(saved, 2)
    p, t = statistics.median(plain), statistics.median(teed)
    print(f"40 MiB of \\r-only output, median of {ROUNDS}:")
    print(f"  unguarded   {p:.3f} s")
    print(f"  tee         {t:.3f} s")
    print(f"  ratio       {t / p:.2f}x")


if __name__ == "__main__":
    main()
