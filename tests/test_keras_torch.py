"""Keras on PyTorch, on the CPU: a failed step's tensors are released by the guard, after the
first failure and after a failed retry (issue 14, 7), shown with weak references.

Needs PyTorch's CPU wheel (``pip install torch==2.13.0`` where it lies on disk; PyPI's default
wheel brings gigabytes of CUDA), so these tests carry the ``torch`` marker and run with
``pytest -m torch``, like the ``gpu`` tests on a GPU machine.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.torch

SCRIPT = """
import gc, os, sys
os.environ["KERAS_BACKEND"] = "torch"
os.environ["GPUGUARD_SIMULATE"] = "8GiB"
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
ip.run_line_magic("load_ext", "ipy_gpuguard")
ip.run_cell('''
import weakref, keras, numpy as np, torch
HELD = []
class Hog(keras.layers.Layer):
    def call(self, x):
        big = torch.ones((int(x.shape[0]), 2**18))  # 1 MiB a sample: allocated
        HELD.append(weakref.ref(big))
        if x.shape[0] > 32:
            torch.empty((2**40,))  # 4 TiB: the step fails, with big alive in its frame
        return x + big.sum() * 0
''')
ip.run_cell('''%%gpuguard
BS = 64
model = keras.Sequential([keras.Input((4,)), Hog(), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
model.fit(np.zeros((256, 4), "float32"), np.zeros((256, 1), "float32"), batch_size=BS, verbose=0)
''')
gc.collect()
print("AFTER-FAILURE", sum(w() is not None for w in ip.user_ns["HELD"]))
ip.user_ns["HELD"].clear()
ip.run_line_magic("gpuguard", "retry 48")
gc.collect()
print("AFTER-RETRY", sum(w() is not None for w in ip.user_ns["HELD"]))
"""


def test_a_failed_steps_tensor_is_released_after_the_failure_and_a_failed_retry():
    pytest.importorskip("torch", reason="pytest -m torch needs PyTorch's CPU wheel")
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).parent.parent,
    )
    assert "[oom.torch.cpu]" in run.stdout, run.stdout[-3000:] + run.stderr[-3000:]
    assert "AFTER-FAILURE 0" in run.stdout
    assert "batch size 48: out of memory" in run.stdout
    assert "AFTER-RETRY 0" in run.stdout
