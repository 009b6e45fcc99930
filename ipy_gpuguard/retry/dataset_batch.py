"""The batch a ``tf.data`` pipeline gives each training step, read without iterating it.

``fit`` is not told a dataset's batch size (Keras ignores ``batch_size`` for one): the
pipeline's ``batch`` is. Every dataset of a pipeline keeps the one it was made from
(``_input_dataset``), and a batching one its size (``_batch_size``, a constant). So the size is
read by walking back from the dataset ``fit`` was given, through the datasets that pass every
batch on (``prefetch``, ``map``, ``shuffle``, ``repeat``, ``cache``, ``take``...), to the
``batch``, ``padded_batch`` or parallel ``batch`` that made it. Any other dataset on the way
(``unbatch``, ``rebatch``, ``flat_map``, ``window``; ``skip``, ``filter`` and ``shard``, which may
keep only an epoch's short last batch; a class of the person's) may change the batch, and the
size is then unknown rather than guessed.

A size read too large is the error that costs a crash: the step's peak shared among samples it
never had makes each sample too small, and the largest batch too large. So the size holds only
where the steps are of one shape, and of it:

- the pipeline's elements say so (``element_spec``): every dimension but the batch's is fixed
  (a ``padded_batch`` of sequences of any length, a ``ragged_batch``, or a ``map`` that resizes
  gives steps whose memory is not the steps' the forecast saw), and a batch dimension that is
  fixed is the size read (a ``map`` that slices the batch is not);
- the batch is whole: ``drop_remainder`` (where a later ``map`` leaves the batch dimension
  unknown, it may have masked samples out), or a known count of samples before the ``batch``
  (fewer than the size make one smaller batch, which is then the batch); a count that cannot
  be told (a ``filter`` before the ``batch``) leaves the size unknown, and so does a
  ``shuffle`` of batches where an epoch ends in a short one, which may then be the first two
  steps' (after a ``repeat``, two epochs' short batches).

A ``map`` after the ``batch`` is taken to keep it whole unless its elements say otherwise: one
that masks samples out of each batch of a pipeline without ``drop_remainder`` cannot be told
from one that augments them, and makes the forecast's batch too large.

Nothing is iterated, so none of the pipeline's functions run; the attributes are read from the
instance dictionaries (:func:`.own_attributes.instance_dict`), of TensorFlow's own classes only.
"""

from __future__ import annotations

import numbers
import sys
from typing import Any

from .own_attributes import class_dict, defined_in, instance_dict

#: Where TensorFlow's datasets live: a class from elsewhere is the person's, whose batches the
#: guard cannot tell.
_TF_DATA = "tensorflow.python.data."
_TENSORFLOW = frozenset({"tensorflow"})
#: The datasets that make batches of a size they keep, by the names of their classes less a
#: leading underscore (TensorFlow 2.13 added it: ``BatchDataset`` became ``_BatchDataset``).
_BATCHING = frozenset({"BatchDataset", "ParallelBatchDataset", "PaddedBatchDataset"})
#: The datasets that pass every batch of their input on, in its order or another.
_PASSING = frozenset(
    {
        "PrefetchDataset",
        "MapDataset",
        "ParallelMapDataset",
        "ShuffleDataset",
        "RepeatDataset",
        "ShuffleAndRepeatDataset",
        "CacheDataset",
        "TakeDataset",
        "OptionsDataset",
        "AssertCardinalityDataset",
        "IgnoreErrorsDataset",
    }
)
#: The datasets that pass batches on in another order: an epoch's short last batch may come
#: first, and after a ``repeat`` the next epoch's too.
_REORDERING = frozenset({"ShuffleDataset", "ShuffleAndRepeatDataset"})
#: A pipeline longer than this is not walked (a dataset that names itself as its input).
_LONGEST = 64
#: What ``Dataset.cardinality`` says of a count it cannot tell, and of an endless dataset.
_UNKNOWN, _INFINITE = -2, -1


def dataset_batch_size(data: Any) -> int | None:
    """The batch each step of ``fit(data)`` trains on where ``data`` is a ``tf.data`` pipeline
    batched by a constant size into steps of one shape; ``None`` for anything else, or where
    the size cannot be told."""
    found = _batching_dataset(data)
    if found is None:
        return None
    batching, passed = found
    attributes = instance_dict(batching)
    size = _whole(_scalar(attributes.get("_batch_size")))
    drop_remainder = _scalar(attributes.get("_drop_remainder"))
    whole = getattr(getattr(drop_remainder, "dtype", None), "kind", None) == "b" and drop_remainder
    if size is None or size <= 0 or not _one_shape(data, size, bool(whole)):
        return None
    if whole:
        return size
    samples = _cardinality(attributes.get("_input_dataset"))
    if samples == _INFINITE:
        return size
    if samples is None or samples <= 0:
        return None
    if samples > size and samples % size and passed & _REORDERING:
        return None  # the short last batch of each epoch may come first, and next
    return min(size, samples)


def _batching_dataset(data: Any) -> tuple[Any, frozenset[str]] | None:
    """The dataset that made the batches ``data`` passes on, and the kinds of dataset that
    pass them; ``None`` where there is none."""
    dataset, passed = data, set[str]()
    for _ in range(_LONGEST):
        if not _of_tf_data(dataset):
            return None
        name = type(dataset).__name__.lstrip("_")
        if name in _BATCHING:
            return dataset, frozenset(passed)
        if name not in _PASSING:
            return None
        passed.add(name)
        dataset = instance_dict(dataset).get("_input_dataset")
    return None


def dataset_samples_alike(data: Any) -> bool:
    """A ``tf.data`` pipeline's elements hold no texts and no ragged rows, whose sizes differ
    from sample to sample; true of anything else (a pipeline's other shapes are checked where
    its batch is read)."""
    tensorflow = sys.modules.get("tensorflow")
    if tensorflow is None or not _of_tf_data(data):
        return True
    specs = tensorflow.nest.flatten(data.element_spec)  # TensorFlow's class: its property
    return not any(
        type(spec).__name__ == "RaggedTensorSpec"
        or (type(spec).__name__ == "TensorSpec" and spec.dtype == tensorflow.string)
        for spec in specs
    )


def _of_tf_data(dataset: Any) -> bool:
    """The dataset's class is ``tf.data``'s own (not one that only says so)."""
    return _of_tensorflow(dataset, _TF_DATA)


def _of_tensorflow(value: Any, prefix: str) -> bool:
    """``value``'s class is TensorFlow's own, of a module under ``prefix``: its module names it
    (:func:`.own_attributes.defined_in`)."""
    kind = type(value)
    module = class_dict(kind).get("__module__")
    return type(module) is str and module.startswith(prefix) and defined_in(kind, _TENSORFLOW)


def _one_shape(dataset: Any, size: int, whole: bool) -> bool:
    """Every element of the pipeline has fixed dimensions but the batch's and holds no texts
    (whose lengths differ), and a batch dimension that is fixed is ``size``; where every batch
    is ``whole`` (``drop_remainder``), it is fixed: one that a later ``map`` left unknown may
    have lost samples (a mask)."""
    tensorflow = sys.modules.get("tensorflow")
    if tensorflow is None:
        return False
    specs = tensorflow.nest.flatten(dataset.element_spec)  # TensorFlow's class: its property
    for spec in specs:
        if type(spec).__name__ != "TensorSpec" or not spec.shape.rank:
            return False  # ragged, sparse, or a step of scalars
        if spec.dtype == tensorflow.string:
            return False  # texts of any length: a model that pads them pads each batch anew
        if not spec.shape[1:].is_fully_defined():
            return False
        batch = spec.shape[0]
        if (batch is None and whole) or (batch is not None and batch != size):
            return False
    return bool(specs)


def _cardinality(dataset: Any) -> int | None:
    """How many elements ``dataset`` yields, as TensorFlow counts them from the pipeline's
    graph without running it: :data:`_INFINITE`, a count, or ``None`` where it cannot tell."""
    if not _of_tf_data(dataset):
        return None
    count = _whole(_scalar(dataset.cardinality()))  # TensorFlow's class: its method
    return None if count is None or count == _UNKNOWN else count


def _scalar(value: Any) -> Any:
    """The value of an eager scalar tensor of TensorFlow's (a NumPy scalar); ``None`` for
    anything else."""
    if not _of_tensorflow(value, "tensorflow."):
        return None
    try:
        return value.numpy()  # TensorFlow's own tensor: no code of the person's runs
    except (AttributeError, NotImplementedError, TypeError, ValueError):  # symbolic: no value
        return None


def _whole(scalar: Any) -> int | None:
    return int(scalar) if isinstance(scalar, numbers.Integral) else None
