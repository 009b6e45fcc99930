"""XLA's analysis of Keras 3's train step on JAX, as the compiled forecast asks it: a real step
compiled in a process of its own (Keras chooses its backend once, at import)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent.parent

ANALYSES = """
import json, sys
sys.path.insert(0, {root!r})
import numpy as np, keras
from ipy_gpuguard.retry import compiled_step

x = np.zeros((64, 16, 16, 3), "float32")
y = np.zeros((64,), "int32")
model = keras.Sequential([keras.Input((16, 16, 3)), keras.layers.Conv2D(8, 3),
                          keras.layers.BatchNormalization(), keras.layers.GlobalAveragePooling2D(),
                          keras.layers.Dense(10)])
model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x, y, batch_size=8, epochs=1, steps_per_epoch=1, verbose=0)
needs = {{}}
for options in ("analysis only", "XLA's defaults"):
    if options == "XLA's defaults":
        compiled_step.ANALYSIS_ONLY = {{}}
    needs[options] = [compiled_step.step_need_bytes(model, x, y, size) for size in (32, 96)]
print("NEEDS", json.dumps(needs))
"""


@pytest.mark.tensorflow
def test_compiling_for_analysis_only_leaves_xlas_figures_as_they_are():
    """The machine code goes unoptimised (it never runs), which must not move a byte of what
    XLA says the step needs."""
    script = textwrap.dedent(ANALYSES).format(root=str(ROOT))
    env = {**os.environ, "KERAS_BACKEND": "jax"}
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=240
    )
    (line,) = [line for line in run.stdout.splitlines() if line.startswith("NEEDS ")]
    needs = json.loads(line.removeprefix("NEEDS "))
    small, large = needs["analysis only"]
    assert large > small > 0
    assert needs["analysis only"] == needs["XLA's defaults"]


PERSONS_CONTAINERS = """
import json, sys
sys.path.insert(0, {root!r})
import numpy as np, keras
from ipy_gpuguard.retry import compiled_step

noted = []

class Pair(tuple):  # the person's tuple of inputs: its methods note each call
    def __new__(cls, items):
        noted.append("__new__")
        return super().__new__(cls, items)
    def __iter__(self):
        noted.append("__iter__")
        return super().__iter__()

class Labels:  # the person's labels: no array library's, with properties of its own
    @property
    def shape(self):
        noted.append("shape")
        return (64,)
    @property
    def dtype(self):
        noted.append("dtype")
        return np.dtype("int32")

first, second = keras.Input((4,)), keras.Input((6,))
out = keras.layers.Dense(1)(keras.layers.Concatenate()([first, second]))
model = keras.Model([first, second], out)
model.compile("adam", "mse")
x = Pair((np.zeros((64, 4), "float32"), np.zeros((64, 6), "float32")))
y = np.zeros((64, 1), "float32")
model.fit(list(tuple.__iter__(x)), y, batch_size=8, epochs=1, steps_per_epoch=1, verbose=0)
noted.clear()
need = compiled_step.step_need_bytes(model, x, y, 32)
try:
    compiled_step.step_need_bytes(model, x, Labels(), 32)
    refused = False
except TypeError:
    refused = True
print("SEEN", json.dumps({{"need": need, "refused": refused, "noted": noted}}))
"""


@pytest.mark.tensorflow
def test_the_persons_containers_and_labels_are_read_without_their_code():
    """A tuple of inputs of the person's own subclass is read through ``tuple``'s methods (a
    namedtuple's ``__new__`` takes its fields, not an iterable), and labels of no array
    library are refused, their ``shape`` and ``dtype`` never asked."""
    script = textwrap.dedent(PERSONS_CONTAINERS).format(root=str(ROOT))
    env = {**os.environ, "KERAS_BACKEND": "jax"}
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=240
    )
    lines = [line for line in run.stdout.splitlines() if line.startswith("SEEN ")]
    assert lines, run.stderr[-3000:]
    seen = json.loads(lines[0].removeprefix("SEEN "))
    assert seen["need"] > 0
    assert seen["refused"]
    assert seen["noted"] == []
