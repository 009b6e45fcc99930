"""The watch on the compiled forecast's trace in a real kernel, where the streams are
ipykernel's: a warning or log line the trace writes is no code of the person's."""

from __future__ import annotations

import json

import pytest

from .client import execute, keras_kernel

pytestmark = pytest.mark.kernel

LOGGED_TRACE = """
import json, sys
import jax, keras, numpy as np
from ipy_gpuguard.retry import compiled_step
from ipy_gpuguard.retry.trace_guard import PersonsCode

model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                          keras.layers.Dense(1)])
model.compile("adam", "mse")
x, y = np.zeros((64, 8), "float32"), np.zeros((64, 1), "float32")
model.fit(x, y, batch_size=8, epochs=1, steps_per_epoch=1, verbose=0)
jax.config.update("jax_log_compiles", True)  # JAX logs each compilation to the kernel's stderr
try:
    outcome = compiled_step.step_need_bytes(model, x, y, 24)
except PersonsCode as error:
    outcome = str(error)
finally:
    jax.config.update("jax_log_compiles", False)
print("OUTCOME", json.dumps([type(sys.stderr).__module__, outcome]))
"""


def test_a_trace_that_logs_to_the_kernels_stream_is_made(tmp_path):
    """Helper 20: with ``jax_log_compiles`` on, an ordinary Keras model got no compiled
    forecast in Jupyter (ipykernel's ``OutStream.write`` was stopped as the person's code) and
    the log line was lost."""
    with keras_kernel(tmp_path, KERAS_BACKEND="jax") as client:
        ran = execute(client, LOGGED_TRACE, timeout=240)
    assert ran.status == "ok", ran.reply
    (line,) = [line for line in ran.stdout().splitlines() if line.startswith("OUTCOME ")]
    stream, outcome = json.loads(line.removeprefix("OUTCOME "))
    assert stream.startswith("ipykernel")
    assert isinstance(outcome, int), outcome
    assert outcome > 0
