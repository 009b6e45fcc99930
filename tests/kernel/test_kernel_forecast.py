"""The memory forecast against the true largest batch, in a real kernel (issue 37).

TensorFlow's BFC allocator runs on the CPU under a 256 MiB limit and the kernel's simulated GPU
has the same size, as in ``bench/forecast.py``. The true largest batch T of a model whose memory
per sample is the same in every run is bracketed first, by training it in processes of its own
(BFC's state after an out-of-memory error is not a fresh device's). Then, in one kernel: a
guarded fit at T/4 leaves a forecast between 0.85·T and T, and ``--find-max`` from 4·T, whose
own run fails at the first step, ends at 0.9·T or more without an attempt of its own that runs
out of memory.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

import pytest

from .client import evaluate, execute, keras_kernel
from .test_kernel_probes import cards

#: BFC waits for memory to be freed before it gives up (``AllocatorRetry``, 10 s an allocation,
#: and no setting turns it off): an out-of-memory trial took 12 to 85 s here.
pytestmark = [pytest.mark.kernel, pytest.mark.tensorflow, pytest.mark.timeout(900)]

LIMIT_MB = 256
SAMPLES = 1600
#: Floats a sample holds: about 700 KiB, for T near 300.
WIDTH = 180_000
#: T is known to within this share: a trial fits at the bracket's low end, not at its high end.
PRECISION = 0.02

ALLOCATOR = {
    "TF_CPU_ALLOCATOR_USE_BFC": "true",
    "TF_CPU_BFC_MEM_LIMIT_IN_MB": str(LIMIT_MB),
    "TF_ENABLE_ONEDNN_OPTS": "0",
    "TF_CPP_MIN_LOG_LEVEL": "3",
    "KERAS_BACKEND": "tensorflow",
}

#: The model and its data. Its memory per sample is ``WIDTH`` floats kept from the forward pass
#: to the backward in 64 tensors made one after the other (each waits on the last's sum), so that
#: the allocator meets them in the same order in every run; BFC's memory one region, as a GPU's
#: is. A real model's peaks vary from run to run under BFC on the CPU (an LSTM's at batch 224:
#: 212 to 233 MB in four fresh processes; its T: 257 to 273), and a T that moves by 6% cannot
#: tell a forecast within 15% of it from one above it: ``bench/forecast.py`` measures real ones.
MODEL = f"""
import json, keras, numpy as np, tensorflow as tf
held = tf.raw_ops.Empty(shape=[int(0.98 * {LIMIT_MB} * 2**20) // 4], dtype=tf.float32)
del held
keras.utils.set_random_seed(0)

class Activations(keras.layers.Layer):
    def __init__(self, width):
        super().__init__()
        self.width, self.seed = width, keras.random.SeedGenerator(1)
        self.weight = self.add_weight(shape=(), initializer="ones")
        self.zero = self.add_weight(shape=(), initializer="zeros", trainable=False)

    def call(self, x):
        rows, held = keras.ops.shape(x)[0], 0.0
        for _ in range(64):
            after_the_last = keras.ops.cast(held * self.zero, "int32")
            chunk = keras.random.uniform((rows + after_the_last, self.width // 64), seed=self.seed)
            held = held + keras.ops.mean(chunk * self.weight)
        return x + held * self.zero

model = keras.Sequential([
    keras.Input((32,)), keras.layers.Dense(64), Activations({WIDTH}), keras.layers.Dense(10)])
model.compile(keras.optimizers.Adam(),
              keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=False)
rng = np.random.default_rng(0)
x = rng.standard_normal(({SAMPLES}, 32), dtype=np.float32)
y = rng.integers(0, 10, {SAMPLES}, dtype=np.int32)
"""

TRIAL = (
    MODEL
    + """
import sys
sizes = [int(size) for size in sys.argv[1:]]
peaks = []
try:
    for size in sizes:
        tf.config.experimental.reset_memory_stats("CPU:0")
        model.fit(x, y, batch_size=size, epochs=1, steps_per_epoch=3, verbose=0)
        peaks.append(tf.config.experimental.get_memory_info("CPU:0")["peak"])
    print("TRIAL", "fits", *peaks)
except tf.errors.ResourceExhaustedError:
    print("TRIAL", "oom")
"""
)


def trial(*sizes: int) -> list[int] | None:
    """Train the model 3 steps at each size in a fresh process: the allocator's peaks, or
    ``None`` when a size ran out of memory."""
    run = subprocess.run(
        [sys.executable, "-c", TRIAL, *map(str, sizes)],
        capture_output=True,
        text=True,
        env={**os.environ, **ALLOCATOR},
        timeout=300,
    )
    (line,) = [line for line in run.stdout.splitlines() if line.startswith("TRIAL ")]
    words = line.split()
    return [int(peak) for peak in words[2:]] if words[1] == "fits" else None


def true_largest_batch() -> tuple[int, int]:
    """T, bracketed within :data:`PRECISION`: the largest size seen to fit, and the smallest seen
    to run out of memory, each in a fresh process (a forecast is above T where it reaches the
    second). The first size tried is where the line through two small sizes' peaks meets the
    limit (each size that runs out of memory costs BFC's 10 s wait, or more); then the bracket
    is closed by bisection."""
    small, large = 32, 64
    peaks = trial(small, large)
    assert peaks is not None
    per_sample = (peaks[1] - peaks[0]) / (large - small)
    guess = int((LIMIT_MB * 2**20 - (peaks[1] - per_sample * large)) / per_sample)
    fits, failed = large, None
    size = guess
    while failed is None or failed - fits > max(PRECISION * failed, 1):
        if trial(size) is None:
            failed = size
        else:
            fits = size
        size = int(fits * 1.04) + 1 if failed is None else (fits + failed) // 2
    assert failed is not None
    return fits, failed


def test_the_forecast_at_a_quarter_and_the_search_from_four_times_the_largest_batch(tmp_path):
    largest, failed = true_largest_batch()
    env = {**ALLOCATOR, "GPUGUARD_SIMULATE": f"{LIMIT_MB}MiB"}
    with keras_kernel(tmp_path, **env) as client:
        assert execute(client, MODEL).status == "ok"
        fit = f"model.fit(x, y, batch_size={largest // 4}, epochs=1, steps_per_epoch=3, verbose=0)"
        assert execute(client, "%%gpuguard\n" + fit, timeout=300).status == "ok"
        assert execute(client, "forecast = %gpuguard forecast --json").status == "ok"
        forecast = json.loads(ast.literal_eval(evaluate(client, "json.dumps(forecast)")))
        assert forecast["basis"] == "measured"
        assert 0.85 * largest <= forecast["largest_batch"] < failed, (forecast, largest, failed)

        search = (
            "%%gpuguard --find-max\n"
            f"BATCH = {4 * largest}\n"
            "model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)\n"
        )
        run = execute(client, search, timeout=600)
        assert run.status == "ok", run.error()
        attempts = cards(run)[-1]["retry"]["attempts"]
        assert [a["result"] for a in attempts].count("out_of_memory") == 0, attempts
        found = int(evaluate(client, "BATCH"))
        assert 0.9 * largest <= found < failed, (attempts, largest, failed)


GROWING = """
import json, keras, numpy as np, tensorflow as tf
held = tf.zeros((int(0.98 * 400 * 2**20) // 4,), tf.float32)  # one region, as on a GPU
del held
class Keeps(keras.callbacks.Callback):
    kept = []
    def on_epoch_end(self, epoch, logs=None):
        self.kept.append(tf.ones((10 * 2**20,), tf.float32))  # 40 MiB kept every epoch
x = np.random.rand(256, 32).astype("float32")
y = np.random.randint(0, 10, 256)
model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(64), keras.layers.Dense(10)])
model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
"""


def test_memory_kept_every_epoch_is_projected_to_the_epoch_that_really_fails(tmp_path):
    """A callback that keeps a tensor each epoch, under a 400 MiB limit: the forecast names
    the epoch in which the allocator then really fails (a failed allocation there is retried
    for 10 s before it raises), and the card quotes it."""
    env = {**ALLOCATOR, "TF_CPU_BFC_MEM_LIMIT_IN_MB": "400", "GPUGUARD_SIMULATE": "400MiB"}
    with keras_kernel(tmp_path, **env) as client:
        assert execute(client, GROWING).status == "ok"
        fit = "model.fit(x, y, batch_size=32, epochs=30, verbose=0, callbacks=[Keeps()])"
        run = execute(client, "%%gpuguard --interval 0.05\n" + fit, timeout=300)
        assert run.reply["content"]["ename"] == "ResourceExhaustedError", run.error()
        failed_in_epoch = int(evaluate(client, "len(Keeps.kept)")) + 1
        assert execute(client, "forecast = %gpuguard forecast --json").status == "ok"
        forecast = json.loads(ast.literal_eval(evaluate(client, "json.dumps(forecast)")))
        assert abs(forecast["fills_at_epoch"] - failed_in_epoch) <= 1
        assert forecast["growth_bytes_per_epoch"] >= 40 << 20
        told = f"the device fills at epoch {forecast['fills_at_epoch']}."
        said = [json.dumps(card, ensure_ascii=False) for card in cards(run)]
        assert any(
            "Before it failed — Forecast (measured" in card and told in card for card in said
        )


ON_JAX = """
import json, numpy as np, keras
x = np.random.default_rng(0).random((512, 32, 32, 3)).astype("float32")
y = np.random.default_rng(1).integers(0, 10, 512)
def trained():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([
        keras.Input((32, 32, 3)), keras.layers.Conv2D(16, 3, activation="relu"),
        keras.layers.Dropout(0.3), keras.layers.Flatten(), keras.layers.Dense(10)])
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, batch_size=256, epochs=1, verbose=0)
    return [np.asarray(v.numpy()) for v in model.weights]
unguarded = trained()
"""


def test_on_jax_a_step_larger_than_the_gpu_is_forecast_and_warned_of_before_its_first_step(
    tmp_path,
):
    """XLA's analysis of Keras' train step, made as the fit begins: the simulated GPU is smaller
    than the step needs, and the live panel warns before the first step. The model trained under
    the guard ends with the very weights it ends with unguarded: the forecast lowered the step
    with shapes only, and changed no variable (Dropout's seed included)."""
    with keras_kernel(tmp_path, KERAS_BACKEND="jax", GPUGUARD_SIMULATE="64MiB") as client:
        assert execute(client, ON_JAX).status == "ok"
        run = execute(client, "%%gpuguard --interval 0.1\nguarded = trained()", timeout=300)
        assert run.status == "ok", run.error()
        same = "all(np.array_equal(a, b) for a, b in zip(unguarded, guarded))"
        assert evaluate(client, same) == "True"
        assert execute(client, "forecast = %gpuguard forecast --json").status == "ok"
        forecast = json.loads(ast.literal_eval(evaluate(client, "json.dumps(forecast)")))
        assert forecast["basis"] == "compiled"
        assert forecast["step"] == 0
        assert forecast["peak_bytes"] > 64 << 20
        assert 0 < forecast["largest_batch"] < 256
        panels = [
            json.dumps(msg["content"]["data"], ensure_ascii=False)
            for msg in run.of_type("display_data") + run.of_type("update_display_data")
        ]  # the live panel, redrawn as the forecast is made
        assert any("this step needs" in p and "it will run out of memory" in p for p in panels)
