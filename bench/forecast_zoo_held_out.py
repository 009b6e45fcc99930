"""Models of the forecast bench added after the forecast's rule was fixed (issue 37).

The models of :mod:`forecast_zoo` were measured, and a third of them held out by a hash of their
names, before the forecast's fixed part was changed to what the allocator holds between the
first two steps: that change was judged with every table in view. These four were written and
measured after it, and nothing was changed after their table was read: they are held out by
construction.
"""

from __future__ import annotations

import keras
from forecast_zoo import (
    InputSpec,
    MakeData,
    ZooModel,
    _classified,
    _compiled,
    _encoder_block,
    _floats,
    _text,
)


def vgg_pool(spec: InputSpec) -> tuple[keras.Model, MakeData]:
    """Convolutions with max pooling between widths, a dense head with Dropout."""
    layers: list[keras.layers.Layer] = []
    for width in (32, 64, 128):
        layers += [
            keras.layers.Conv2D(width, 3, padding="same", activation="relu"),
            keras.layers.Conv2D(width, 3, padding="same", activation="relu"),
            keras.layers.MaxPooling2D(),
        ]
    head = [keras.layers.Flatten(), keras.layers.Dense(256, activation="relu")]
    model = keras.Sequential(
        [
            keras.Input(spec.shape),
            *layers,
            *head,
            keras.layers.Dropout(0.5),
            keras.layers.Dense(spec.classes),
        ]
    )
    return _compiled(model, keras.optimizers.Adam()), _classified(
        spec, lambda n: _floats(n, spec.shape)
    )


def lstm_stack(spec: InputSpec) -> tuple[keras.Model, MakeData]:
    """Two stacked LSTMs over embeddings, every step's output kept, trained by RMSprop."""
    model = keras.Sequential(
        [
            keras.Input(spec.shape, dtype="int32"),
            keras.layers.Embedding(spec.vocab, 96),
            keras.layers.LSTM(96, return_sequences=True),
            keras.layers.LSTM(96, return_sequences=True),
            keras.layers.GlobalMaxPooling1D(),
            keras.layers.Dense(spec.classes),
        ]
    )
    return _compiled(model, keras.optimizers.RMSprop()), _text(spec)


def vit_tiny(spec: InputSpec) -> tuple[keras.Model, MakeData]:
    """A small vision transformer: 4x4 patches as tokens, three encoder blocks."""
    inputs = keras.Input(spec.shape)
    patches = keras.layers.Conv2D(96, 4, strides=4)(inputs)
    x = keras.layers.Reshape((-1, 96))(patches)
    for _ in range(3):
        x = _encoder_block(x, heads=4, width=96)
    x = keras.layers.GlobalAveragePooling1D()(x)
    model = keras.Model(inputs, keras.layers.Dense(spec.classes)(x))
    return _compiled(model, keras.optimizers.Adam(1e-3)), _classified(
        spec, lambda n: _floats(n, spec.shape)
    )


def wide_dense(spec: InputSpec) -> tuple[keras.Model, MakeData]:
    """Wide dense layers with Dropout: weights and Adamax's slots are a large fixed part."""
    layers: list[keras.layers.Layer] = []
    for _ in range(5):
        layers += [keras.layers.Dense(1024, activation="relu"), keras.layers.Dropout(0.2)]
    model = keras.Sequential([keras.Input(spec.shape), *layers, keras.layers.Dense(spec.classes)])
    return _compiled(model, keras.optimizers.Adamax()), _classified(
        spec, lambda n: _floats(n, spec.shape)
    )


HELD_OUT_ZOO: tuple[ZooModel, ...] = (
    ZooModel("vgg_pool", "conv", InputSpec((48, 48, 3)), vgg_pool),
    ZooModel("lstm_stack", "recurrent", InputSpec((150,), vocab=10_000), lstm_stack),
    ZooModel("vit_tiny", "attention", InputSpec((32, 32, 3)), vit_tiny),
    ZooModel("wide_dense", "dense", InputSpec((2048,)), wide_dense),
)
