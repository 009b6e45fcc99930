"""Each stack our users train on, in its own venv, in a real kernel: the extension loads, a
guarded ``fit`` has its steps counted, a real out-of-memory error gives a card, ``%gpuguard
retry`` ends fixed, and the doctor runs; and installing the project changes no framework.

Deselected by default (each venv downloads a framework): ``make stacks`` runs them, as
``.ci/run`` does.
"""

from __future__ import annotations

import re

import pytest

from ipy_gpuguard.protocol import CARD_MIME

from ..kernel.client import execute
from .kernels import stack_kernel, text_of
from .venvs import STACKS, Stack, venv, would_install

#: A stack's venv downloads and installs its framework first: minutes, not the usual limit.
pytestmark = [pytest.mark.stack, pytest.mark.timeout(1200)]

SAMPLES, FITTING, LIMIT = 256, 32, 100


def cliff_cell(stack: Stack, batch_size: int) -> str:
    """A ``fit`` with a real out-of-memory error above ``LIMIT`` samples, written with the
    stack's own Keras: beyond it, a layer asks for terabytes. On JAX, whose shapes are fixed
    when a step is traced, the step sorts them: XLA allocates the sort's memory while the step
    runs, so the error comes late, as JAX's asynchronous errors do."""
    if stack.keras == "keras":
        imports = "import keras"
        init = "self.seed = keras.random.SeedGenerator(1)"
        held = (
            "batch = x.shape[0]\n"
            "        extra = max(batch - self.limit, 0) if isinstance(batch, int) else 0\n"
            "        held = keras.random.uniform((extra, 2**19, 2**10), seed=self.seed)\n"
            "        return x + keras.ops.sum(keras.ops.sort(held, axis=0)[:1, :1, 0]) * 0"
        )
    else:
        imports = "import tensorflow as tf\nfrom tensorflow import keras"
        init = "pass"
        held = (
            "extra = tf.maximum(tf.shape(x)[0] - self.limit, 0)\n"
            "        return x + tf.reduce_sum(tf.random.uniform((extra, 2**20, 2**20))) * 0"
        )
    return f"""%%gpuguard
{imports}
import numpy as np

class MemoryHog(keras.layers.Layer):
    def __init__(self, limit, **kwargs):
        super().__init__(**kwargs)
        self.limit = limit
        {init}

    def call(self, x):
        {held}

model = keras.Sequential([keras.Input((16,)), MemoryHog({LIMIT}), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
x = np.zeros(({SAMPLES}, 16), "float32")
y = np.zeros(({SAMPLES}, 1), "float32")
history = model.fit(x, y, batch_size={batch_size}, epochs=1, verbose=0)
"""


@pytest.mark.parametrize("stack", STACKS, ids=[stack.name for stack in STACKS])
def test_the_guard_works_on_the_stack(stack, project, tmp_path):
    interpreter = venv(stack, project)
    with stack_kernel(stack, interpreter, tmp_path) as client:
        fitted = execute(client, cliff_cell(stack, FITTING), timeout=300)
        assert fitted.status == "ok", text_of(fitted)
        steps = SAMPLES // FITTING
        # "8 steps · 2291.1 steps/s": the count, not the rate's digits before "steps/s".
        assert re.search(rf"(?<![\d.]){steps} steps(?!/)", text_of(fitted)), text_of(fitted)

        failed = execute(client, cliff_cell(stack, SAMPLES), timeout=300)
        assert failed.status == "error"
        cards = [
            msg["content"]["data"][CARD_MIME]
            for msg in failed.of_type("display_data")
            if CARD_MIME in msg["content"]["data"]
        ]
        assert [card["kind"] for card in cards] == ["oom"], text_of(failed)

        fixed = execute(client, "%gpuguard retry", timeout=300)
        assert fixed.status == "ok", text_of(fixed)
        assert "Fixed: batch size" in text_of(fixed)

        doctor = execute(client, "%gpuguard doctor", timeout=300)
        assert doctor.status == "ok", text_of(doctor)
        assert "Traceback" not in text_of(doctor)
        assert stack.installed in text_of(doctor)  # the kernel ran on the stack's own packages


def test_installing_the_project_beside_tensorflow_2_10_changes_no_framework(project):
    """Issue 24 item 1: ``[tensorflow]`` put TensorFlow 2.21, Keras 3 and NumPy 2 beside
    TensorFlow 2.10."""
    (stack,) = [stack for stack in STACKS if stack.name == "tf2.10-keras2"]
    venv(stack, project)
    installs = would_install(stack)
    assert "ipy-gpuguard" in installs or "ipy_gpuguard" in installs
    frameworks = {name for name in installs if name.startswith(("tensorflow", "keras", "tf-"))}
    assert frameworks == set()
    assert "numpy" not in installs
