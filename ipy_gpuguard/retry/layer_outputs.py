"""The largest tensor a Keras model's step makes per sample, read from the graph Keras recorded
when the model was built on symbolic inputs.

Only the graph of the model being trained counts: each call of a layer that graph holds, and the
graphs of the models called in it, where that call is the one their own graph was built for. A
layer keeps a record of every call (a person may call it outside the model to see a shape; a
backbone may be used in a model of larger images first), and those calls are no part of this
step.

Everything is read from the instance dictionaries of Keras' objects (:mod:`.own_attributes`),
never by looking an attribute up: a person's layer or model may define ``__getattr__``,
``__getattribute__``, ``__dict__`` or properties such as ``layers`` and ``output``, and none of
that runs on the guard's account. Keras 3 and Keras 2 keep the graph
in ``_nodes_by_depth`` (Keras 3's ``Sequential`` in the functional model it holds as
``_functional``), and each call's outputs in its node's ``outputs``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .own_attributes import instance_dict


def largest_activation_bytes(model: Any) -> int:
    """The bytes a sample adds to the model's largest layer output: the largest tensor its step
    makes per sample, forward or (as its gradient) backward; 0 where none can be read.

    Read from shapes, never from values. A model with no graph (a subclassed one, never called
    on symbolic inputs) gives 0, and its line keeps the plain headroom; an output whose shape is
    not fixed (sequences of any length) is passed over. Tensors inside a layer (a convolution's
    workspace) are not outputs: where they are larger, the headroom is what covers them.
    """
    return max((_bytes_per_sample(t) for t in _graph_outputs(model, set())), default=0)


def _graph_outputs(model: Any, seen: set[int]) -> list[Any]:
    """The outputs of every call in ``model``'s graph, and in the graphs of the models called
    in it for the inputs their graph was built for; each model is walked once."""
    if id(model) in seen:
        return []
    seen.add(id(model))
    outputs: list[Any] = []
    for node in _graph_nodes(model):
        state = instance_dict(node)
        called = _tensors(state.get("outputs"))
        outputs += called
        operation = state.get("operation", state.get("layer"))  # Keras 3, Keras 2
        graph = _graph_state(operation)
        own = _tensors(graph.get("_outputs", graph.get("outputs")))  # Keras 3, Keras 2
        if own and _shapes(own) == _shapes(called):
            outputs += _graph_outputs(operation, seen)
    return outputs


def _graph_nodes(model: Any) -> list[Any]:
    by_depth = _graph_state(model).get("_nodes_by_depth")
    if not isinstance(by_depth, dict):
        return []
    return [node for nodes in by_depth.values() if isinstance(nodes, list) for node in nodes]


def _graph_state(model: Any) -> Mapping[str, Any]:
    """The instance dictionary of the functional model that holds ``model``'s graph."""
    state = instance_dict(model)
    functional = state.get("_functional")
    return instance_dict(functional) if functional is not None else state


def _tensors(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, Mapping):
        value = list(value.values())
    if isinstance(value, list | tuple):
        return [tensor for item in value for tensor in _tensors(item)]
    return [value]


def _shapes(tensors: list[Any]) -> list[tuple[Any, ...]]:
    """The tensors' shapes without the batch."""
    return [tuple(getattr(tensor, "shape", None) or ())[1:] for tensor in tensors]


def _bytes_per_sample(tensor: Any) -> int:
    shape = getattr(tensor, "shape", None)
    itemsize = _itemsize(getattr(tensor, "dtype", None))
    if shape is None or itemsize is None:
        return 0
    dimensions = list(shape)[1:]
    if not all(isinstance(d, int) for d in dimensions):
        return 0
    return int(math.prod(dimensions)) * itemsize


_ITEMSIZES = {"float64": 8, "int64": 8, "float32": 4, "int32": 4, "float16": 2, "bfloat16": 2}


def _itemsize(dtype: Any) -> int | None:
    size = getattr(dtype, "size", None) or getattr(dtype, "itemsize", None)
    if isinstance(size, int):
        return size
    name = getattr(dtype, "name", dtype)
    return _ITEMSIZES.get(str(name))
