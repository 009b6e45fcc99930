"""``tf.distribute`` in a real kernel: TensorFlow's CPU split into two logical devices under
``MirroredStrategy``, two simulated GPUs standing for them (issue 24 item 11). A replica runs out
of memory above 40 samples; the retry keeps the global batch a multiple of the replicas."""

from __future__ import annotations

import re

import pytest

from ipy_gpuguard.protocol import CARD_MIME

from .client import execute, keras_kernel

pytestmark = pytest.mark.kernel

TWO_REPLICAS = """
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
"""

#: Each replica asks for 4 TiB per sample above 40 of its own.
MIRRORED_FIT = """%%gpuguard --auto-retry
import keras
import numpy as np

class MemoryHog(keras.layers.Layer):
    def __init__(self, limit, **kwargs):
        super().__init__(**kwargs)
        self.limit = limit

    def call(self, x):
        extra = tf.maximum(tf.shape(x)[0] - self.limit, 0)
        return x + tf.reduce_sum(tf.random.uniform((extra, 2**20, 2**20))) * 0

with strategy.scope():
    model = keras.Sequential([keras.Input((8,)), MemoryHog(40), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", jit_compile=False)
x = np.zeros((1200, 8), "float32")
y = np.zeros((1200, 1), "float32")
BATCH_SIZE = 300
history = model.fit(x, y, batch_size=BATCH_SIZE, epochs=1, verbose=0)
"""


def test_a_replica_out_of_memory_is_retried_with_a_batch_the_replicas_split_evenly(tmp_path):
    with keras_kernel(tmp_path, GPUGUARD_SIMULATE="8GiB,8GiB") as client:
        assert execute(client, TWO_REPLICAS).status == "ok"
        fixed = execute(client, MIRRORED_FIT, timeout=300)

        assert fixed.status == "ok"  # --auto-retry fixed it
        card = [
            msg["content"]["data"][CARD_MIME]
            for msg in fixed.of_type("display_data") + fixed.of_type("update_display_data")
            if CARD_MIME in msg["content"]["data"]
        ][-1]
        facts = {fact["name"]: fact["value"] for fact in card["facts"]}
        # The op and device of whichever replica failed first: replica 0's ops have no prefix.
        op = re.fullmatch(
            r"(replica_1/)?sequential\w*/memory_hog\w*/random_uniform/RandomUniform", facts["op"]
        )
        assert op is not None, facts["op"]
        assert facts["device"] == ("CPU:1" if op.group(1) else "CPU:0")
        assert len(card["chart"]) == 2  # both GPUs the replicas stand on
        notes = " ".join(card["retry"]["offer"]["notes"])
        assert "split across 2 replicas (tf.distribute): 300 is 150 per replica" in notes
        sizes = [attempt["batch_size"] for attempt in card["retry"]["attempts"]]
        assert sizes
        assert all(size % 2 == 0 for size in sizes)
        assert card["retry"]["attempts"][-1]["result"] == "fits"
        assert int(execute(client, "print(BATCH_SIZE)").stdout()) == sizes[-1] <= 80
