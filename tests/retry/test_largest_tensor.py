"""The largest tensor a step makes per sample, read from a real Keras model's layers, and the
room a measured forecast keeps for it (BFC hands a free chunk out whole when it is less than
twice the request)."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from ipy_gpuguard.record.forecast import Basis, Capacity
from ipy_gpuguard.retry.fit_forecast import MEASURED_AFTER, FitForecaster
from ipy_gpuguard.retry.forecast import (
    HEADROOM,
    MEASURED_HEADROOM,
    MemoryLine,
)
from ipy_gpuguard.retry.layer_outputs import largest_activation_bytes
from ipy_gpuguard.watchdog.progress import StepRecorder

MiB = 2**20


def conv_net(dtype: str | None = None) -> keras.Model:
    return keras.Sequential(
        [
            keras.Input((32, 32, 3)),
            keras.layers.Conv2D(16, 3, padding="same", dtype=dtype),  # 32 * 32 * 16: the largest
            keras.layers.MaxPooling2D(dtype=dtype),
            keras.layers.Flatten(dtype=dtype),
            keras.layers.Dense(10, dtype=dtype),
        ]
    )


def test_the_largest_layer_output_is_read_per_sample_in_its_own_dtype():
    assert largest_activation_bytes(conv_net()) == 32 * 32 * 16 * 4
    assert largest_activation_bytes(conv_net("mixed_float16")) == 32 * 32 * 16 * 2


def test_a_model_nested_in_another_is_looked_into():
    inputs = keras.Input((64,))
    wide = keras.Sequential([keras.Input((64,)), keras.layers.Dense(4096), keras.layers.Dense(8)])
    outer = keras.Model(inputs, keras.layers.Dense(2)(wide(inputs)))
    assert largest_activation_bytes(outer) == 4096 * 4


def test_what_cannot_be_read_is_passed_over_and_a_model_of_none_gives_nothing():
    class Subclassed(keras.Model):
        def __init__(self) -> None:
            super().__init__()
            self.dense = keras.layers.Dense(4096)

        def call(self, x):
            return self.dense(x)

    assert largest_activation_bytes(Subclassed()) == 0  # no symbolic outputs
    texts = keras.Sequential(
        [keras.Input((None,), dtype="int32"), keras.layers.Embedding(100, 32), keras.layers.LSTM(8)]
    )
    assert largest_activation_bytes(texts) == 8 * 4  # sequences of any length: passed over
    assert largest_activation_bytes(object()) == 0


def test_a_layer_called_twice_is_read_at_each_call():
    """A layer shared between inputs makes one output a call: the second can be the larger."""
    single, sequence = keras.Input((16,)), keras.Input((32, 16))
    shared = keras.layers.Dense(64)
    first = keras.layers.Dense(1)(shared(single))
    pooled = keras.layers.GlobalAveragePooling1D()(shared(sequence))  # 32 * 64 a sample
    model = keras.Model([single, sequence], [first, keras.layers.Dense(1)(pooled)])
    assert largest_activation_bytes(model) == 32 * 64 * 4


def test_reading_the_largest_tensor_runs_none_of_the_persons_code():
    """A layer may override ``output``: the forecast reads what Keras recorded, and the
    person's property never runs on the guard's account."""
    calls = []

    class Watched(keras.layers.Dense):
        @property
        def output(self):
            calls.append(self.name)
            return super().output

    model = keras.Sequential([keras.Input((8,)), Watched(1024), keras.layers.Dense(2)])
    calls.clear()  # Keras' own reads, as the model was built
    assert largest_activation_bytes(model) == 1024 * 4
    assert calls == []


def test_a_call_outside_the_model_trained_is_no_part_of_its_step():
    """A layer records every call: one made to see what it would output for a long sequence,
    or a backbone used first in a model of larger images, makes nothing in this model's step."""
    shared = keras.layers.Dense(16)
    inputs = keras.Input((8,))
    model = keras.Model(inputs, keras.layers.Dense(1)(shared(inputs)))
    shared(keras.Input((100_000, 8)))  # the person's look at a shape: symbolic, no memory
    assert largest_activation_bytes(model) == 16 * 4

    any_size = keras.Input((None, None, 3))
    backbone = keras.Model(any_size, keras.layers.Conv2D(8, 3, padding="same")(any_size))
    large = keras.Input((512, 512, 3))
    keras.Model(large, backbone(large))  # an earlier experiment
    small = keras.Input((32, 32, 3))
    pooled = keras.layers.GlobalAveragePooling2D()(backbone(small))
    classifier = keras.Model(small, keras.layers.Dense(1)(pooled))
    assert largest_activation_bytes(classifier) == 32 * 32 * 8 * 4


def test_reading_the_graph_runs_none_of_the_persons_code():
    """Properties, ``__getattr__``, ``__getattribute__`` and ``__dict__`` of the person's own
    classes: the walk reads Keras' records through Python's own ``__dict__`` descriptor."""
    ran = []

    class Listed(keras.Sequential):
        @property
        def layers(self):
            ran.append("layers")
            return super().layers

    class Delegating(keras.layers.Dense):
        def __getattr__(self, name):
            ran.append(f"__getattr__ {name}")
            raise AttributeError(name)

    class Watched(keras.layers.Dense):
        def __getattribute__(self, name):
            if name in ("__dict__", "output", "_inbound_nodes"):
                ran.append(f"__getattribute__ {name}")
            return super().__getattribute__(name)

    class Configured(keras.layers.Dense):
        def __init__(self, units: int) -> None:
            super().__init__(units)
            self.layers = 4  # a hyperparameter of the person's that happens to be called so

    model = Listed(
        [keras.Input((8,)), Delegating(64), Watched(256), Configured(32), keras.layers.Dense(2)]
    )
    ran.clear()  # Keras' own reads, as the model was built
    assert largest_activation_bytes(model) == 256 * 4
    assert ran == []


def test_a_measured_line_leaves_room_for_one_more_of_the_largest_tensor():
    """Near the limit one request may take a free chunk of almost twice its size whole: at the
    largest batch, what the step leaves is at least one largest tensor more."""
    fixed, per_sample, largest_tensor = 100 * MiB, 2 * MiB, MiB // 2
    capacity = 1024 * MiB
    line = MemoryLine.measured(64, fixed + 64 * per_sample, fixed, largest_tensor)
    assert line is not None
    batch = line.largest_batch(capacity)
    usable = (capacity - fixed) * (1 - MEASURED_HEADROOM)
    assert (per_sample + largest_tensor) * batch <= usable
    assert (per_sample + largest_tensor) * (batch + 1) > usable
    assert capacity - line.peak_at(batch) >= largest_tensor * batch


def test_without_the_largest_tensor_a_measured_line_keeps_its_headroom_alone():
    line = MemoryLine.measured(64, 228 * MiB, 100 * MiB)
    assert line == MemoryLine(100 * MiB, 2 * MiB, 0, MEASURED_HEADROOM)
    assert MEASURED_HEADROOM >= HEADROOM  # never less than a compiled line keeps


def test_the_forecaster_keeps_the_largest_tensor_of_the_persons_model_free():
    model = conv_net()
    steps = StepRecorder()
    forecaster = FitForecaster(
        lambda: Capacity(1024 * MiB),
        read_peak=lambda: 200 * MiB if steps.steps else 0,  # reset as the cell began
        read_held=lambda: 10 * MiB,
    )
    forecaster.fit_began(model, {"x": np.zeros((1024, 32, 32, 3)), "batch_size": 64}, 16)
    for step in range(1, MEASURED_AFTER + 1):
        steps.step()
        forecaster.step_ended(model, step)
    forecast = forecaster.look()
    assert forecast is not None
    assert forecast.basis is Basis.MEASURED
    fixed = 10 * MiB  # what the allocator held between the first two steps, and nothing more
    per_sample = (200 * MiB - fixed) / 64
    usable = (1024 * MiB - fixed) * (1 - MEASURED_HEADROOM)
    assert forecast.largest_batch == int(usable // (per_sample + 32 * 32 * 16 * 4))


@pytest.mark.parametrize("headroom", [0.0, 0.5])
def test_a_headroom_given_overrides_the_lines_own(headroom):
    line = MemoryLine(0, MiB, MiB, MEASURED_HEADROOM)
    assert line.largest_batch(1024 * MiB, headroom) == int(1024 * (1 - headroom) // 2)
