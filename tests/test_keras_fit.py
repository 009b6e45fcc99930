"""A real Keras fit on CPU trains to the same result with and without the guard."""

from __future__ import annotations

TRAIN = """
import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(7)
tf.config.experimental.enable_op_determinism()
x = np.random.default_rng(0).normal(size=(512, 16)).astype("float32")
y = (x.sum(axis=1) > 0).astype("float32")
model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(1, activation="sigmoid")])
model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
history = model.fit(x, y, batch_size=64, epochs=3, verbose=0)
weights = [w.copy() for w in model.get_weights()]
"""


def train(shell, guarded):
    cell = ("%%gpuguard --interval 0.1\n" if guarded else "") + TRAIN
    result = shell.run_cell(cell, store_history=True)
    assert result.success, result.error_in_exec
    return shell.user_ns["history"].history, shell.user_ns["weights"]


def test_fit_under_the_guard_matches_the_plain_fit(shell, capsys):
    plain_history, plain_weights = train(shell, guarded=False)
    guarded_history, guarded_weights = train(shell, guarded=True)
    assert guarded_history == plain_history
    assert len(guarded_history["loss"]) == 3
    assert all((a == b).all() for a, b in zip(plain_weights, guarded_weights, strict=True))
    assert "ipy_gpuguard · finished" in capsys.readouterr().out
