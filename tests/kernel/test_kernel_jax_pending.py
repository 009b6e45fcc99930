"""Keras on JAX in a real kernel: a ``fit`` whose out-of-memory error JAX holds back (it runs
the step asynchronously, and ``fit`` returns normally) fails its own guarded cell, with a card
that names the CPU the simulated GPU stands for (issue 24 item 5)."""

from __future__ import annotations

import pytest

from ipy_gpuguard.protocol import CARD_MIME
from ipy_gpuguard.shell.pending_work import SURFACED

from .client import execute, keras_kernel

pytestmark = pytest.mark.kernel

#: Above 32 samples a step sorts [batch - 32, 2**19, 2**10] floats: XLA allocates the sort's
#: 2 TiB while the step runs, after it was dispatched, so the error waits in the step's results.
LATE_OOM_FIT = """%%gpuguard
import keras
import numpy as np

class SortHog(keras.layers.Layer):
    def __init__(self, limit, **kwargs):
        super().__init__(**kwargs)
        self.limit = limit
        self.seed = keras.random.SeedGenerator(1)

    def call(self, x):
        batch = x.shape[0]
        extra = max(batch - self.limit, 0) if isinstance(batch, int) else 0
        held = keras.random.uniform((extra, 2**19, 2**10), seed=self.seed)
        return x + keras.ops.sum(keras.ops.sort(held, axis=0)[:1, :1, 0]) * 0

model = keras.Sequential([keras.Input((16,)), SortHog(32), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
x = np.zeros((256, 16), "float32")
y = np.zeros((256, 1), "float32")
history = model.fit(x, y, batch_size=64, epochs=1, verbose=0)
"""


def test_an_out_of_memory_jax_held_back_fails_the_cell_that_caused_it(tmp_path):
    with keras_kernel(tmp_path, KERAS_BACKEND="jax") as client:
        failed = execute(client, LATE_OOM_FIT, timeout=240)

        assert failed.status == "error"
        assert failed.reply["content"]["ename"] == "JaxRuntimeError"
        assert "Out of memory allocating" in failed.reply["content"]["evalue"]
        stderr = "".join(
            msg["content"]["text"]
            for msg in failed.of_type("stream")
            if msg["content"]["name"] == "stderr"
        )
        assert SURFACED in stderr
        (error,) = failed.of_type("error")
        assert not any("ipy_gpuguard" in line for line in error["content"]["traceback"])
        (card,) = [
            msg["content"]["data"][CARD_MIME]
            for msg in failed.of_type("display_data")
            if CARD_MIME in msg["content"]["data"]
        ]
        assert card["kind"] == "oom"
        assert card["title"] == "Out of CPU memory (XLA)"

        # The failed fit's arrays hold their error for good: a later guarded cell is not
        # failed by them, and the retry's attempt is judged by its own arrays alone.
        later = execute(client, "%%gpuguard\nprint('the next cell')")
        assert (later.status, later.stdout().splitlines()[0]) == ("ok", "the next cell")
        fixed = execute(client, "%gpuguard retry", timeout=240)
        assert fixed.status == "ok"
        # SortHog is the person's layer: the guard never traces it for a forecast (issue 37)
        assert "ipy_gpuguard · Fixed: batch size 8 fits" in fixed.stdout()  # 64 / 8, the estimate
