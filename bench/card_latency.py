"""How long after a training cell fails its remediation card appears, in a real kernel.

Twenty real Keras out-of-memory failures on CPU (see ``tests/oom_cells.py``) under
``%%gpuguard``. For each, three kernel-side moments: the exception caught in the cell
(``time.time()`` in an ``except`` that re-raises), the ``error`` message (the traceback) and the
card's ``display_data``, both by their header dates. Printed side by side: the median time from
the exception to the traceback, and to the card (diagnosis, freeing memory, the incident log and
the widgets included).

Keras runs on each backend installed (TensorFlow, JAX, PyTorch), one kernel per backend, and
the figures are printed side by side.

Run with ``.venv/bin/python bench/card_latency.py``.
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent))

from ipy_gpuguard.protocol import CARD_MIME
from tests.kernel.client import evaluate, execute, kernel
from tests.oom_cells import keras_fit_oom

RUNS = 20


#: For JAX and PyTorch, whose compiled steps let XLA fold a memory hog inside ``fit`` away: the
#: same impossible allocation (4 TiB a sample, 32 samples) asked of Keras' backend directly.
EAGER_OOM = """import keras
try:
    big = keras.random.uniform((32, 2**20, 2**20))
    keras.ops.convert_to_numpy(big[0, 0, :1])  # JAX dispatches asynchronously: wait for it
except Exception:
    _caught_at = time.time()
    raise
"""


def failing_cell(backend: str = "tensorflow") -> str:
    if backend != "tensorflow":
        return "%%gpuguard --interval 0.5\nimport time\n" + EAGER_OOM
    body = keras_fit_oom(jit_compile=False).replace("model.fit(", "try:\n    model.fit(") + (
        "except Exception:\n    _caught_at = time.time()\n    raise\n"
    )
    return "%%gpuguard --interval 0.5\nimport time\n" + body


def seconds(date: datetime) -> float:
    return (date if date.tzinfo else date.replace(tzinfo=timezone.utc)).timestamp()


def measure(backend: str) -> tuple[list[float], list[float]]:
    env = {
        "KERAS_BACKEND": backend,
        "GPUGUARD_SIMULATE": "8GiB",
        "TF_CPU_ALLOCATOR_USE_BFC": "true",
        "TF_ENABLE_ONEDNN_OPTS": "0",
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "JUPYTER_DATA_DIR": tempfile.mkdtemp(prefix="ipy_gpuguard-bench-"),
    }
    to_traceback, to_card = [], []
    with kernel(**env) as client:
        execute(client, "%load_ext ipy_gpuguard")
        execute(client, failing_cell(backend), timeout=300)  # warm-up: imports, tracing, first card
        for _ in range(RUNS):
            run = execute(client, failing_cell(backend), timeout=300)
            caught = float(evaluate(client, "_caught_at"))
            (error,) = run.of_type("error")
            (card,) = [
                msg for msg in run.of_type("display_data") if CARD_MIME in msg["content"]["data"]
            ]
            to_traceback.append(seconds(error["header"]["date"]) - caught)
            to_card.append(seconds(card["header"]["date"]) - caught)
    return to_traceback, to_card


def main() -> None:
    backends = [
        backend
        for backend, module in (("tensorflow", "tensorflow"), ("jax", "jax"), ("torch", "torch"))
        if importlib.util.find_spec(module) is not None
    ]
    print(f"runs: {RUNS} real Keras OOMs on CPU per backend, {os.cpu_count()} CPUs, medians")
    print(f"{'backend':<12}{'-> traceback':>14}{'-> card':>10}{'max card':>10}")
    for backend in backends:
        to_traceback, to_card = measure(backend)
        print(
            f"{backend:<12}{statistics.median(to_traceback) * 1000:>11.1f} ms"
            f"{statistics.median(to_card) * 1000:>7.1f} ms{max(to_card) * 1000:>7.1f} ms"
        )


if __name__ == "__main__":
    main()
