"""The batch a real ``tf.data`` pipeline gives each step, read without running any of it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from ipy_gpuguard.record.forecast import Capacity, Unforeseen  # noqa: E402
from ipy_gpuguard.retry.dataset_batch import dataset_batch_size, dataset_samples_alike  # noqa: E402
from ipy_gpuguard.retry.fit_forecast import FitForecaster, fit_batch_size  # noqa: E402

pytestmark = pytest.mark.tensorflow

MiB = 2**20


def samples() -> tf.data.Dataset:
    x = np.zeros((100, 3), "float32")
    return tf.data.Dataset.from_tensor_slices((x, np.zeros(100, "int64")))


@pytest.mark.parametrize(
    ("pipeline", "batch"),
    [
        (lambda d: d.batch(16), 16),
        (lambda d: d.shuffle(10).batch(16, drop_remainder=True).repeat().cache().take(3), 16),
        (lambda d: d.batch(16).map(lambda x, y: (x * 2, y)).prefetch(2), 16),
        (lambda d: d.batch(16, num_parallel_calls=2).map(lambda x, y: (x, y), 2), 16),
        (lambda d: d.padded_batch(8), 8),
        (lambda d: d.batch(2048), 100),  # one step of every sample, as for arrays
        (lambda d: d.take(10).batch(64).repeat(), 10),
        (lambda d: d.repeat().batch(2048), 2048),
        (lambda d: d.batch(256, drop_remainder=True).map(lambda x, y: (x, y)), 256),
        (lambda d: d.batch(50).repeat().shuffle(8), 50),  # every batch whole: no short one
        (lambda d: d.batch(12).with_options(tf.data.Options()), 12),
        (lambda d: d.batch(np.int64(24)), 24),
    ],
)
def test_the_batch_of_a_pipeline_is_read_back_through_what_passes_batches_on(pipeline, batch):
    assert dataset_batch_size(pipeline(samples())) == batch


@pytest.mark.parametrize(
    "pipeline",
    [
        lambda d: d,  # single samples: Keras would train on them one by one, or not at all
        lambda d: d.batch(4).unbatch(),
        lambda d: d.batch(4).rebatch(2),
        lambda d: d.batch(4).flat_map(lambda x, y: tf.data.Dataset.from_tensors((x, y))),
        lambda d: d.batch(4).window(2),
        lambda d: d.batch(64).skip(1),  # only the short last batch is left
        lambda d: d.batch(64).filter(lambda x, y: tf.shape(x)[0] < 64),
        lambda d: d.batch(64).shard(2, 1),
        lambda d: d.filter(lambda x, y: True).batch(8),  # how many samples: not told
        lambda d: d.batch(32, drop_remainder=True).map(lambda x, y: (x[:8], y[:8])),
        lambda d: d.batch(8).map(lambda x, y: (tf.image.resize(x[..., None], (4, 4)), y)),
        # a mask over batches that were whole: the batch dimension is no longer known
        lambda d: d.batch(16, drop_remainder=True).map(
            lambda x, y: (tf.boolean_mask(x, y > 0), tf.boolean_mask(y, y > 0))
        ),
        # 100 samples end each epoch in a batch of 36, which a shuffle may put first, and next
        lambda d: d.batch(64).repeat().shuffle(8),
        lambda d: d.batch(64).shuffle(2).take(1),
    ],
)
def test_a_pipeline_that_may_change_its_batch_has_none_rather_than_a_guess(pipeline):
    assert dataset_batch_size(pipeline(samples())) is None


def test_steps_of_changing_shapes_have_no_batch_whatever_their_batch_size():
    """A ``padded_batch`` of sequences of any length gives steps whose memory follows their
    longest sequence: the first steps' peak says nothing of the others (58 times too large a
    forecast where the short sequences came first)."""

    def sequences() -> tf.data.Dataset:
        lengths = [8] * 64 + [512] * 192
        return tf.data.Dataset.from_generator(
            lambda: (np.zeros(n, "int32") for n in lengths),
            output_signature=tf.TensorSpec([None], tf.int32),
        ).apply(tf.data.experimental.assert_cardinality(256))

    assert dataset_batch_size(sequences().padded_batch(32)) is None
    assert dataset_batch_size(sequences().ragged_batch(32)) is None
    assert dataset_batch_size(sequences().padded_batch(32, padded_shapes=[512])) == 32


def test_reading_a_pipelines_batch_runs_none_of_it():
    ran = []

    def augment(x: Any) -> Any:
        ran.append("augmented")
        return x

    pipeline = (
        samples()
        .batch(16)
        .map(lambda x, y: (tf.ensure_shape(tf.py_function(augment, [x], tf.float32), [None, 3]), y))
    )
    assert dataset_batch_size(pipeline) == 16
    assert ran == []
    next(iter(pipeline))  # iterating it does
    assert "augmented" in ran


def test_a_dataset_class_of_the_persons_is_not_read():
    looked_up = []

    class Batches(type(samples().batch(4))):  # the person's, made from TensorFlow's batching
        def __getattribute__(self, name: str) -> Any:
            looked_up.append(name)
            return super().__getattribute__(name)

    assert dataset_batch_size(Batches.__new__(Batches)) is None
    assert looked_up == []

    class Disguised(type(samples().batch(4))):  # a module that is no name: not read, not raised
        __module__ = property(lambda self: "tensorflow.python.data.ops")  # type: ignore[assignment]

    assert dataset_batch_size(Disguised.__new__(Disguised)) is None

    class Claimed(type(samples().batch(4))):  # says it is tf.data's own: tf.data does not name it
        __module__ = "tensorflow.python.data.ops.batch_op"

        def __getattribute__(self, name: str) -> Any:
            looked_up.append(name)
            return super().__getattribute__(name)

    claimed = Claimed.__new__(Claimed)
    assert dataset_batch_size(claimed) is None
    assert dataset_samples_alike(claimed)  # data the guard cannot read has no forecast anyway
    assert looked_up == []


def test_a_shuffle_of_batches_never_makes_both_first_steps_short():
    """The steps a fit takes first from the pipelines this module answers: one of the first two
    is a whole batch of the size read, whatever the shuffle's seed."""
    for seed in range(30):
        pipeline = samples().batch(50).repeat().shuffle(8, seed=seed)
        first_two = [len(y) for _, y in pipeline.take(2)]
        assert dataset_batch_size(pipeline) in first_two
        short = samples().batch(64).repeat().shuffle(8, seed=seed)
        assert dataset_batch_size(short) is None


def test_fit_is_forecast_at_its_pipelines_batch_not_its_batch_size_argument():
    pipeline = samples().batch(8).prefetch(1)
    assert fit_batch_size({"x": pipeline, "batch_size": 512}) == 8
    forecaster = FitForecaster(lambda: Capacity(2048 * MiB), lambda: MiB, lambda: MiB)
    forecaster.fit_began(object(), {"x": pipeline, "batch_size": 512}, None)
    assert forecaster.unforeseen is None
    generator = FitForecaster(lambda: Capacity(2048 * MiB), lambda: MiB, lambda: MiB)
    generator.fit_began(object(), {"x": samples().batch(4).unbatch()}, None)
    assert generator.unforeseen is Unforeseen.DATA_BATCHES_ITSELF


def test_texts_and_ragged_rows_differ_from_sample_to_sample():
    texts = tf.data.Dataset.from_tensor_slices((["a", "b c"], [0.0, 1.0]))
    ragged = tf.data.Dataset.from_tensor_slices(tf.ragged.constant([[1.0], [2.0, 3.0]]))
    numbers = tf.data.Dataset.from_tensor_slices(np.zeros((4, 3), "float32"))
    assert not dataset_samples_alike(texts.batch(2))
    assert not dataset_samples_alike(ragged.batch(2))
    assert dataset_samples_alike(numbers.batch(2))
    assert dataset_batch_size(texts.batch(2)) is None
    assert dataset_samples_alike([np.zeros(3)])  # not a pipeline
