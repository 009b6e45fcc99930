"""Fifteen small but real Keras 3 models for the memory forecast's bench (issue 37).

Each entry builds a compiled model and the random data it trains on. They differ where memory
does: dense, convolutional, recurrent, attention and embedding models; BatchNorm, Dropout,
mixed precision; one with two inputs and two outputs; optimizers with 0, 1 and 2 slots a weight.
Sizes are chosen so that under TensorFlow's allocator limited to 512 MiB the largest batch that
fits lies in the hundreds to low thousands: a bisection then means something, and a step at that
size still takes seconds on two CPU cores.

The module imports Keras but never runs an operation at import: :mod:`forecast_truth` imports it
before the allocator is configured.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import keras
import numpy as np

#: What a model trains on: inputs and targets, each an array, a list or a dict of arrays.
Data = tuple[Any, Any]
MakeData = Callable[[int], Data]


@dataclass(frozen=True)
class InputSpec:
    """The shape of one sample, as the model reads it.

    ``shape`` is one input's shape without the batch (an image's height, width and channels; a
    text's length in tokens); ``vocab`` is the number of token ids (0 where inputs are floats).
    """

    shape: tuple[int, ...]
    classes: int = 10
    vocab: int = 0


Build = Callable[[InputSpec], tuple[keras.Model, MakeData]]


@dataclass(frozen=True)
class ZooModel:
    """A model of the bench: its name, its family and how to build it at its own input."""

    name: str
    family: str
    spec: InputSpec
    build: Build


def _floats(n: int, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random((n, *shape), dtype=np.float32)


def _ids(n: int, shape: tuple[int, ...], high: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, high, (n, *shape), dtype=np.int32)


def _classified(spec: InputSpec, inputs: Callable[[int], Any]) -> MakeData:
    """Data for a classifier: ``inputs(n)`` and one integer label a sample."""
    return lambda n: (inputs(n), _ids(n, (), spec.classes, seed=2))


def _compiled(model: keras.Model, optimizer: keras.optimizers.Optimizer) -> keras.Model:
    """A classifier compiled as most are: integer labels, logits, accuracy.

    ``jit_compile=False``: the bench measures TensorFlow's executor, whose allocator the limit
    binds; XLA on the CPU allocates through its own runtime.
    """
    model.compile(
        optimizer=optimizer,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
        jit_compile=False,
    )
    return model


def mlp(spec: InputSpec) -> tuple[keras.Model, MakeData]:
    """A deep narrow MLP: many small activations, Adam's two slots a weight.

    Narrow and deep: activations grow with width times depth, arithmetic with width squared
    times depth, so a step at the largest batch stays at seconds on the CPU.
    """
    layers = [keras.layers.Dense(256, activation="relu") for _ in range(48)]
    model = keras.Sequential([keras.Input(spec.shape), *layers, keras.layers.Dense(spec.classes)])
    return _compiled(model, keras.optimizers.Adam()), _classified(
        spec, lambda n: _floats(n, spec.shape)
    )


def mlp_bn_dropout(spec: InputSpec) -> tuple[keras.Model, MakeData]:
    """Dense, BatchNorm, ReLU, Dropout blocks: BatchNorm's statistics, Dropout's masks."""
    blocks: list[keras.layers.Layer] = []
    for _ in range(16):
        blocks += [
            keras.layers.Dense(512, use_bias=False),
            keras.layers.BatchNormalization(),
            keras.layers.ReLU(),
            keras.layers.Dropout(0.3),
        ]
    model = keras.Sequential([keras.Input(spec.shape), *blocks, keras.layers.Dense(spec.classes)])
    optimizer = keras.optimizers.SGD(0.01, momentum=0.9)
    return _compiled(model, optimizer), _classified(spec, lambda n: _floats(n, spec.shape))


def _conv_stack(widths: list[int], batch_norm: bool, dtype: str | None = None) -> list[Any]:
    """3x3 convolutions, two a width, halving the image between widths."""
    layers: list[Any] = []
    for index, width in enumerate(widths):
        if index:
            layers.append(keras.layers.MaxPooling2D(dtype=dtype))
        for _ in range(2):
            if batch_norm:
                layers += [
                    keras.layers.Conv2D(width, 3, padding="same", use_bias=False, dtype=dtype),
                    keras.layers.BatchNormalization(dtype=dtype),
                    keras.layers.ReLU(dtype=dtype),
                ]
            else:
                layers.append(
                    keras.layers.Conv2D(width, 3, padding="same", activation="relu", dtype=dtype)
                )
    return layers


def cnn(spec: InputSpec) -> tuple[keras.Model, MakeData]:
    """A VGG-like convolution stack on images: activations dominate, weights are few."""
    model = keras.Sequential(
        [
            keras.Input(spec.shape),
            *_conv_stack([16, 32, 64], batch_norm=False),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(spec.classes),
        ]
    )
    return _compiled(model, keras.optimizers.Adam()), _classified(
        spec, lambda n: _floats(n, spec.shape)
    )


def cnn_bn(spec: InputSpec) -> tuple[keras.Model, MakeData]:
    """The same stack with BatchNorm after each convolution, trained by Nesterov SGD."""
    model = keras.Sequential(
        [
            keras.Input(spec.shape),
            *_conv_stack([16, 32, 64], batch_norm=True),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dropout(0.2),
            keras.layers.Dense(spec.classes),
        ]
    )
    optimizer = keras.optimizers.SGD(0.05, momentum=0.9, nesterov=True)
    return _compiled(model, optimizer), _classified(spec, lambda n: _floats(n, spec.shape))


def separable_cnn(spec: InputSpec) -> tuple[keras.Model, MakeData]:
    """MobileNet-like blocks: a depthwise then a pointwise convolution, RMSprop's one slot."""
    blocks: list[Any] = [keras.layers.Conv2D(32, 3, strides=2, padding="same", activation="relu")]
    for width, stride in [(64, 1), (64, 1), (128, 2), (128, 1), (256, 2)]:
        blocks += [
            keras.layers.DepthwiseConv2D(3, strides=stride, padding="same", use_bias=False),
            keras.layers.BatchNormalization(),
            keras.layers.ReLU(6.0),
            keras.layers.SeparableConv2D(width, 3, padding="same", activation="relu"),
            keras.layers.Conv2D(width, 1, use_bias=False),
            keras.layers.BatchNormalization(),
            keras.layers.ReLU(6.0),
        ]
    model = keras.Sequential(
        [
            keras.Input(spec.shape),
            *blocks,
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(spec.classes),
        ]
    )
    return _compiled(model, keras.optimizers.RMSprop(0.001)), _classified(
        spec, lambda n: _floats(n, spec.shape)
    )


def _residual(x: Any, width: int, stride: int) -> Any:
    """A ResNet basic block: two 3x3 convolutions with BatchNorm, a projected shortcut."""
    shortcut = x
    if stride > 1 or x.shape[-1] != width:
        shortcut = keras.layers.Conv2D(width, 1, strides=stride, use_bias=False)(x)
        shortcut = keras.layers.BatchNormalization()(shortcut)
    y = keras.layers.Conv2D(width, 3, strides=stride, padding="same", use_bias=False)(x)
    y = keras.layers.ReLU()(keras.layers.BatchNormalization()(y))
    y = keras.layers.Conv2D(width, 3, padding="same", use_bias=False)(y)
    y = keras.layers.BatchNormalization()(y)
    return keras.layers.ReLU()(keras.layers.Add()([shortcut, y]))


def resnet(spec: InputSpec) -> tuple[keras.Model, MakeData]:
    """A small ResNet (three stages of two blocks): the graph branches and joins."""
    inputs = keras.Input(spec.shape)
    x = keras.layers.Conv2D(16, 3, padding="same", use_bias=False)(inputs)
    x = keras.layers.ReLU()(keras.layers.BatchNormalization()(x))
    for width, stride in [(16, 1), (16, 1), (32, 2), (32, 1), (64, 2), (64, 1)]:
        x = _residual(x, width, stride)
    x = keras.layers.GlobalAveragePooling2D()(x)
    model = keras.Model(inputs, keras.layers.Dense(spec.classes)(x))
    return _compiled(model, keras.optimizers.Adam()), _classified(
        spec, lambda n: _floats(n, spec.shape)
    )


def _text(spec: InputSpec) -> MakeData:
    return _classified(spec, lambda n: _ids(n, spec.shape, spec.vocab))


def lstm(spec: InputSpec) -> tuple[keras.Model, MakeData]:
    """An LSTM classifier over embeddings: the loop keeps every step's gates for the backward."""
    model = keras.Sequential(
        [
            keras.Input(spec.shape, dtype="int32"),
            keras.layers.Embedding(spec.vocab, 64),
            keras.layers.LSTM(128),
            keras.layers.Dense(spec.classes),
        ]
    )
    return _compiled(model, keras.optimizers.Adam()), _text(spec)


def gru(spec: InputSpec) -> tuple[keras.Model, MakeData]:
    """Two stacked GRUs, every step's output kept, max-pooled over time."""
    model = keras.Sequential(
        [
            keras.Input(spec.shape, dtype="int32"),
            keras.layers.Embedding(spec.vocab, 64),
            keras.layers.GRU(96, return_sequences=True),
            keras.layers.GRU(96, return_sequences=True),
            keras.layers.GlobalMaxPooling1D(),
            keras.layers.Dense(spec.classes),
        ]
    )
    return _compiled(model, keras.optimizers.Adam()), _text(spec)


def bilstm(spec: InputSpec) -> tuple[keras.Model, MakeData]:
    """A bidirectional LSTM: two loops over the same sequence, their outputs concatenated."""
    model = keras.Sequential(
        [
            keras.Input(spec.shape, dtype="int32"),
            keras.layers.Embedding(spec.vocab, 64),
            keras.layers.Bidirectional(keras.layers.LSTM(64, return_sequences=True)),
            keras.layers.GlobalAveragePooling1D(),
            keras.layers.Dense(spec.classes),
        ]
    )
    return _compiled(model, keras.optimizers.Adam()), _text(spec)


def conv1d_text(spec: InputSpec) -> tuple[keras.Model, MakeData]:
    """A 1-D convolution text model: wide filters over embeddings, a large embedding table."""
    model = keras.Sequential(
        [
            keras.Input(spec.shape, dtype="int32"),
            keras.layers.Embedding(spec.vocab, 64),
            keras.layers.Dropout(0.2),
            keras.layers.Conv1D(128, 5, padding="same", activation="relu"),
            keras.layers.Conv1D(128, 5, padding="same", activation="relu"),
            keras.layers.GlobalMaxPooling1D(),
            keras.layers.Dense(spec.classes),
        ]
    )
    return _compiled(model, keras.optimizers.Adam()), _text(spec)


def _encoder_block(x: Any, heads: int, width: int) -> Any:
    """A post-norm transformer encoder block: attention and a feed-forward net, each added."""
    attended = keras.layers.MultiHeadAttention(heads, width // heads, dropout=0.1)(x, x)
    x = keras.layers.LayerNormalization()(keras.layers.Add()([x, attended]))
    hidden = keras.layers.Dense(4 * width, activation="gelu")(x)
    fed = keras.layers.Dropout(0.1)(keras.layers.Dense(width)(hidden))
    return keras.layers.LayerNormalization()(keras.layers.Add()([x, fed]))


class _PositionEmbedding(keras.layers.Layer):
    """Token embeddings plus learned position embeddings."""

    def __init__(self, length: int, vocab: int, width: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tokens = keras.layers.Embedding(vocab, width)
        self.positions = keras.layers.Embedding(length, width)

    def call(self, ids: Any) -> Any:
        where = keras.ops.arange(keras.ops.shape(ids)[-1])
        return self.tokens(ids) + self.positions(where)


def transformer(spec: InputSpec) -> tuple[keras.Model, MakeData]:
    """Two encoder blocks: attention's scores grow with the length squared."""
    inputs = keras.Input(spec.shape, dtype="int32")
    x = _PositionEmbedding(spec.shape[0], spec.vocab, 128)(inputs)
    for _ in range(2):
        x = _encoder_block(x, heads=4, width=128)
    x = keras.layers.GlobalAveragePooling1D()(x)
    model = keras.Model(inputs, keras.layers.Dense(spec.classes)(x))
    return _compiled(model, keras.optimizers.AdamW(3e-4)), _text(spec)


def recommender(spec: InputSpec) -> tuple[keras.Model, MakeData]:
    """A two-tower recommender: a user's viewing history and a candidate item, dot product.

    Two wide tables (users and items, ``spec.vocab`` items) make the fixed part large; each
    sample's ``spec.shape[0]`` history items make its per-sample part.
    """
    users, width = 50_000, 64
    history = keras.Input(spec.shape, dtype="int32", name="history")
    user = keras.Input((), dtype="int32", name="user")
    item = keras.Input((), dtype="int32", name="item")
    items = keras.layers.Embedding(spec.vocab, width)
    seen = keras.layers.GlobalAveragePooling1D()(items(history))
    person = keras.layers.Concatenate()([keras.layers.Embedding(users, width)(user), seen])
    person = keras.layers.Dense(width)(keras.layers.Dense(256, activation="relu")(person))
    score = keras.layers.Dot(axes=1)([person, items(item)])
    model = keras.Model([history, user, item], score)
    model.compile(
        optimizer=keras.optimizers.Adam(),
        loss=keras.losses.BinaryCrossentropy(from_logits=True),
        jit_compile=False,
    )

    def make_data(n: int) -> Data:
        x = [_ids(n, spec.shape, spec.vocab), _ids(n, (), users, 3), _ids(n, (), spec.vocab, 4)]
        return x, _ids(n, (1,), 2, 5).astype(np.float32)

    return model, make_data


def autoencoder(spec: InputSpec) -> tuple[keras.Model, MakeData]:
    """A convolutional autoencoder: strided convolutions down, Conv2DTranspose up, MSE."""
    layers: list[Any] = [keras.Input(spec.shape)]
    for width in (32, 64, 128):
        layers.append(keras.layers.Conv2D(width, 3, strides=2, padding="same", activation="relu"))
    for width in (128, 64, 32):
        layers.append(
            keras.layers.Conv2DTranspose(width, 3, strides=2, padding="same", activation="relu")
        )
    layers.append(keras.layers.Conv2D(spec.shape[-1], 3, padding="same", activation="sigmoid"))
    model = keras.Sequential(layers)
    model.compile(optimizer=keras.optimizers.Adam(), loss="mse", jit_compile=False)

    def make_data(n: int) -> Data:
        images = _floats(n, spec.shape)
        return images, images

    return model, make_data


def mixed_cnn(spec: InputSpec) -> tuple[keras.Model, MakeData]:
    """A narrower ``cnn_bn`` with every layer in ``mixed_float16`` but the logits.

    Narrower because half-precision convolutions are slow on the CPU. The policy is set per
    layer through its dtype policy, not globally, so the other models stay in float32
    in the same process. Keras wraps the optimizer in a ``LossScaleOptimizer`` for such models
    only when the model's own policy is mixed; here it is wrapped explicitly.
    """
    half = "mixed_float16"
    model = keras.Sequential(
        [
            keras.Input(spec.shape),
            *_conv_stack([8, 16, 32], batch_norm=True, dtype=half),
            keras.layers.GlobalAveragePooling2D(dtype=half),
            keras.layers.Dense(spec.classes, dtype="float32"),
        ]
    )
    optimizer = keras.optimizers.LossScaleOptimizer(keras.optimizers.Adam())
    return _compiled(model, optimizer), _classified(spec, lambda n: _floats(n, spec.shape))


def multi_io(spec: InputSpec) -> tuple[keras.Model, MakeData]:
    """An image and a table in, a class and a number out: two losses, weighted."""
    image = keras.Input(spec.shape, name="image")
    table = keras.Input((32,), name="table")
    x = image
    for width in (32, 64, 128):
        x = keras.layers.Conv2D(width, 3, padding="same", activation="relu")(x)
        x = keras.layers.MaxPooling2D()(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    t = keras.layers.Dense(64, activation="relu")(table)
    joined = keras.layers.Concatenate()([x, t])
    label = keras.layers.Dense(spec.classes, name="label")(joined)
    amount = keras.layers.Dense(1, name="amount")(joined)
    model = keras.Model({"image": image, "table": table}, {"label": label, "amount": amount})
    model.compile(
        optimizer=keras.optimizers.Adam(),
        loss={
            "label": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            "amount": keras.losses.MeanSquaredError(),
        },
        loss_weights={"label": 1.0, "amount": 0.2},
        jit_compile=False,
    )

    def make_data(n: int) -> Data:
        x = {"image": _floats(n, spec.shape), "table": _floats(n, (32,), 3)}
        y = {"label": _ids(n, (), spec.classes, 2), "amount": _floats(n, (1,), 4)}
        return x, y

    return model, make_data


IMAGE = InputSpec((64, 64, 3))
SMALL_IMAGE = InputSpec((32, 32, 3))
TEXT = InputSpec((200,), vocab=20_000)

ZOO: tuple[ZooModel, ...] = (
    ZooModel("mlp", "dense", InputSpec((784,)), mlp),
    ZooModel("mlp_bn_dropout", "dense", InputSpec((784,)), mlp_bn_dropout),
    ZooModel("cnn", "conv", IMAGE, cnn),
    ZooModel("cnn_bn", "conv", IMAGE, cnn_bn),
    ZooModel("separable_cnn", "conv", SMALL_IMAGE, separable_cnn),
    ZooModel("resnet", "conv", SMALL_IMAGE, resnet),
    ZooModel("autoencoder", "conv", IMAGE, autoencoder),
    ZooModel("mixed_cnn", "conv-mixed", IMAGE, mixed_cnn),
    ZooModel("multi_io", "conv-multi", IMAGE, multi_io),
    ZooModel("lstm", "recurrent", TEXT, lstm),
    ZooModel("gru", "recurrent", TEXT, gru),
    ZooModel("bilstm", "recurrent", TEXT, bilstm),
    ZooModel("conv1d_text", "embedding", TEXT, conv1d_text),
    ZooModel("transformer", "attention", InputSpec((64,), vocab=20_000), transformer),
    ZooModel("recommender", "embedding", InputSpec((400,), classes=2, vocab=200_000), recommender),
)
