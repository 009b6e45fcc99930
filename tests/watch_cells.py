"""Keras cells for the watchdog's tests and notebook: real ``fit`` calls that block or crawl."""

from __future__ import annotations

#: A generator whose batches take ``step_s`` each, and which blocks for good after
#: ``block_after`` batches, polling as a stuck input pipeline does.
GENERATOR = """
import time
import numpy as np
import keras

def batches(step_s=0.0, block_after=None, block_s=None):
    i = 0
    while True:
        if i == block_after:
            blocked = time.monotonic()
            while block_s is None or time.monotonic() - blocked < block_s:
                time.sleep(0.05)
        time.sleep(step_s)
        i += 1
        yield np.zeros((8, 4), "float32"), np.zeros((8, 1), "float32")

model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
model.compile("sgd", "mse")
"""

#: A model whose tracing (its first step) sleeps ``seconds``, as a long compilation does.
SLOW_FIRST_STEP = """
import time
import keras

class SlowToTrace(keras.layers.Layer):
    def call(self, x):
        time.sleep({seconds})  # runs only while the function is traced, on the first step
        return x

slow_model = keras.Sequential([keras.Input((4,)), SlowToTrace(), keras.layers.Dense(1)])
slow_model.compile("sgd", "mse")
"""
