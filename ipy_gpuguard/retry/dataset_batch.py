"""The batch a ``tf.data`` pipeline gives each training step, read without iterating it.

``fit`` is not told a dataset's batch size (Keras ignores ``batch_size`` for one): the
pipeline's ``batch`` is. Every dataset of a pipeline keeps the one it was made from
(``_input_dataset``), and a batching one its size (``_batch_size``, a constant). So the size is
read by walking back from the dataset ``fit`` was given, through the datasets that pass a batch
on whole (``prefetch``, ``map``, ``shuffle``, ``repeat``, ``cache``, ``take``...), to the
``batch``, ``padded_batch`` or parallel ``batch`` that made it. Any other dataset on the way
(``unbatch``, ``rebatch``, ``flat_map``, ``window``, a class of the person's) may change the
batch, and the size is then unknown rather than guessed. Nothing is iterated, so none of the
pipeline's functions run, and the attributes are read from the instance dictionaries
(:func:`.own_attributes.instance_dict`).

The size read is the batch of every step but an epoch's last, which may be smaller: the
forecast reads the second step's peak, a full batch wherever an epoch has two.
"""

from __future__ import annotations

import numbers
from typing import Any

from .own_attributes import instance_dict

#: Where TensorFlow's datasets live: a class from elsewhere is the person's, whose batches the
#: guard cannot tell.
_TF_DATA = "tensorflow.python.data."
#: The datasets that make batches of a size they keep, by the names of their classes less a
#: leading underscore (TensorFlow 2.13 added it: ``BatchDataset`` became ``_BatchDataset``).
_BATCHING = frozenset({"BatchDataset", "ParallelBatchDataset", "PaddedBatchDataset"})
#: The datasets that pass each batch of their input on as it is (or drop whole batches).
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
        "TakeWhileDataset",
        "SkipDataset",
        "FilterDataset",
        "ShardDataset",
        "OptionsDataset",
        "AssertCardinalityDataset",
        "IgnoreErrorsDataset",
    }
)
#: A pipeline longer than this is not walked (a dataset that names itself as its input).
_LONGEST = 64


def dataset_batch_size(data: Any) -> int | None:
    """The batch each step of ``fit(data)`` trains on where ``data`` is a ``tf.data`` pipeline
    batched by a constant size; ``None`` for anything else, or where the size cannot be told."""
    dataset = data
    for _ in range(_LONGEST):
        kind = type(dataset)
        if not kind.__module__.startswith(_TF_DATA):
            return None
        attributes, name = instance_dict(dataset), kind.__name__.lstrip("_")
        if name in _BATCHING:
            return _constant(attributes.get("_batch_size"))
        if name not in _PASSING:
            return None
        dataset = attributes.get("_input_dataset")
    return None


def _constant(size: Any) -> int | None:
    """The value of an eager scalar tensor of TensorFlow's (a batch size), when positive."""
    if not type(size).__module__.startswith("tensorflow."):
        return None
    try:
        value = size.numpy()  # TensorFlow's own tensor: no code of the person's runs
    except (AttributeError, NotImplementedError, TypeError, ValueError):  # symbolic: no value
        return None
    whole = int(value) if isinstance(value, numbers.Integral) else 0
    return whole if whole > 0 else None
