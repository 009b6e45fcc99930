"""Cells that fail with a real TensorFlow out-of-memory error on CPU (see DESIGN.md).

A layer asks for ``[batch - limit, 2**30]`` random floats: nothing below ``limit`` samples,
an impossible 4 GiB per sample above it. Random numbers cannot be folded away by XLA the way
zeros or a broadcast are, so the allocation is real with and without XLA.
"""

from __future__ import annotations


def memory_hog(per_sample_shape: str) -> str:
    """The layer's source: ``[batch - limit, *per_sample_shape]`` random floats."""
    return f"""
import keras
import numpy as np

class MemoryHog(keras.layers.Layer):
    def __init__(self, limit, **kwargs):
        super().__init__(**kwargs)
        self.limit = limit

    def call(self, x):
        extra = keras.ops.maximum(keras.ops.shape(x)[0] - self.limit, 0)
        return x + keras.ops.sum(keras.random.uniform((extra, {per_sample_shape}))) * 0
"""


def keras_fit_oom(jit_compile: bool, batch_size: int = 64, limit: int = 32) -> str:
    return (
        memory_hog("2**30")
        + f"""
model = keras.Sequential([keras.Input((16,)), MemoryHog({limit}, name="hog"), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse", jit_compile={jit_compile})
x = np.zeros((256, 16), "float32")
y = np.zeros((256, 1), "float32")
model.fit(x, y, batch_size={batch_size}, epochs=1, verbose=0)
"""
    )


def keras_fit_cliff(batch_size: int, limit: int, samples: int = 1024) -> str:
    """A Keras ``fit`` with a memory cliff at exactly ``limit`` samples: above it, each sample
    asks for 4 TiB (a ``[batch - limit, 2**20, 2**20]`` float tensor), which no machine has.

    ``BATCH_SIZE`` and ``history`` come from the run: a test reads which run they belong to.
    """
    return (
        memory_hog("2**20, 2**20")
        + f"""
BATCH_SIZE = {batch_size}  # the cell's batch size
model = keras.Sequential([keras.Input((16,)), MemoryHog({limit}, name="hog"), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse", jit_compile=False)
x = np.zeros(({samples}, 16), "float32")
y = np.zeros(({samples}, 1), "float32")
history = model.fit(x, y, batch_size=BATCH_SIZE, epochs=1, verbose=0)
"""
    )
