"""``diagnose()`` on the real reports of the corpus and on generated adversarial text up to
1 MB, against the bounds: 50 ms on any real report, 200 ms on 1 MB of anything.

    .venv/bin/python bench/diagnose.py
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from ipy_gpuguard.diagnosis import Context, diagnose

CORPUS = Path(__file__).parent.parent / "tests" / "data" / "errors"
REAL_BOUND_S, MEGABYTE_BOUND_S = 0.050, 0.200
OOM = (
    "ResourceExhaustedError: OOM when allocating tensor with shape[32,1024] and type float on "
    "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc\n"
)
FAMILIES = {
    "digits": "1",
    "one token": "x",
    "spaces": " ",
    "brackets": "[",
    "repeated phrase": "Cannot assign a device for operation ",
    "size-like": "0.5 ",
    "library-like": "lib64_",
    "mixed": "OOM when allocating tensor with shape[1,",
    "lines of digits": "1" * 799 + "\n",
    "lines of a phrase": "Cannot assign a device for operation GPU:0 " * 18 + "\n",
    "short lines": "x\n",
}
SIZES = (1_000, 16_000, 64_000, 256_000, 1_000_000)


def seconds(text: str, rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        diagnose(text, Context())
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    reports = [case.read_text() for case in sorted(CORPUS.glob("*/*.txt"))]
    real = [seconds(text) for text in reports]
    print(f"real reports ({len(reports)}, up to {max(map(len, reports))} chars):")
    print(
        f"  median {statistics.median(real) * 1000:.2f} ms, max {max(real) * 1000:.2f} ms "
        f"(bound {REAL_BOUND_S * 1000:.0f} ms: {'ok' if max(real) <= REAL_BOUND_S else 'OVER'})"
    )
    print("adversarial text after a real OOM line, worst of the families, by size:")
    for size in SIZES:
        worst, family = max(
            (seconds(OOM + (piece * (size // len(piece) + 1))[:size]), name)
            for name, piece in FAMILIES.items()
        )
        ratio = worst / max(real)
        print(
            f"  {size:>9,} chars: {worst * 1000:7.2f} ms ({family}; {ratio:.1f}x the slowest real "
            "report)"
        )
    print(
        f"bound on 1 MB: {MEGABYTE_BOUND_S * 1000:.0f} ms: "
        f"{'ok' if worst <= MEGABYTE_BOUND_S else 'OVER'}"
    )


if __name__ == "__main__":
    main()
