"""Everything a training of a model changes, kept in host memory and put back whole.

A search measures sizes with the guard's own training calls on the person's model, and puts
back what they trained; between the whole runs of a search it puts the model back as it was
before the cell, so that the run the search ends on trains it once. "What they trained" is more
than ``model.variables``: a ``train_step`` of the person's may count in a ``tf.Variable`` of its
own, draw from a ``tf.random.Generator`` (whose state is a variable), and Keras 2 keeps its
step counter outside the model's variables. So the state is every variable reachable from the
model and its optimizers through their attributes, lists and dicts, found as ``tf.train.
Checkpoint`` finds them, plus the attributes a ``fit`` replaces (``history``, ``stop_training``).

Host memory, not the device: a copy on the device would be part of the peak a probe measures.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

#: Attributes of a model that a ``fit`` replaces and the guard puts back as they were.
_FIT_ATTRIBUTES = ("history", "stop_training", "_eval_epoch_iterator")
#: How deep the walk from a model goes through attributes, lists and dicts.
_MAX_DEPTH = 12
#: Attribute values never walked into: plain data, and what links back to the framework's
#: globals (a layer's ``_tracker`` lists its own attributes again; ``_inbound_nodes`` the graph).
_SKIPPED_ATTRIBUTES = frozenset({"_inbound_nodes", "_outbound_nodes", "_tracker", "_parent"})
_ATOMS = (str, bytes, int, float, complex, bool, type(None), type)
#: Framework modules whose objects hold no training state of their own: graphs, traced
#: functions, tensors, datasets. Walking into them costs time and finds nothing new.
_STATELESS_MODULES = (
    "tensorflow.python.eager",
    "tensorflow.python.framework",
    "tensorflow.python.data",
    "tensorflow.core",
)


@dataclass
class KeptState:
    """The values of every variable of ``models`` (and their optimizers), and the attributes a
    ``fit`` replaces, as they were when kept."""

    values: list[tuple[Any, Any]]
    attributes: list[tuple[Any, str, Any]]

    @classmethod
    def of(cls, models: Iterable[Any]) -> KeptState:
        import numpy as np  # the model's framework has imported it already

        models = list(models)
        for model in models:
            _build_optimizers(model)
        # numpy() then a copy that owns its data: the framework may hand out a view of its buffer.
        values = [(variable, np.array(variable.numpy())) for variable in training_state(models)]
        attributes = [
            (model, name, getattr(model, name))
            for model in models
            for name in _FIT_ATTRIBUTES
            if name in vars(model)
        ]
        return cls(values, attributes)

    def restore(self) -> None:
        """Put every kept value back (a variable made since is left as it is)."""
        for variable, value in self.values:
            variable.assign(value)
        for model, name, value in self.attributes:
            setattr(model, name, value)


def _build_optimizers(model: Any) -> None:
    """Make the slots of a built model's optimizers now, as its first step would (zeros, or
    the optimizer's initial value): Keras on TensorFlow defers them to the first traced step,
    so a state kept before it would miss them, and a run put back would keep its momentum."""
    if not getattr(model, "built", False):
        return
    for optimizer in _optimizers(model):
        build = getattr(optimizer, "build", None)
        if getattr(optimizer, "built", True) or not callable(build):
            continue
        build(model.trainable_variables)


def training_state(models: list[Any]) -> list[Any]:
    """Every variable reachable from ``models`` and their optimizers, once each, in a stable
    order: the model's own first (weights, non-trainable state, seed generators' state), then
    whatever its attributes hold (a counter, a ``tf.random.Generator``'s state)."""
    found: dict[int, Any] = {}
    for model in models:
        for variable in getattr(model, "variables", ()):
            found.setdefault(id(variable), variable)
        for optimizer in _optimizers(model):
            for variable in _variables(optimizer):
                found.setdefault(id(variable), variable)
    seen: set[int] = set()
    for model in models:
        for variable in _reachable_variables(model, seen, 0):
            found.setdefault(id(variable), variable)
    return list(found.values())


def _optimizers(model: Any) -> list[Any]:
    """The model's optimizer and any other it holds (a GAN's two)."""
    held = [getattr(model, "optimizer", None), *vars(model).values()]
    unique = {id(value): value for value in held if _is_optimizer(value)}
    return list(unique.values())


def _is_optimizer(value: object) -> bool:
    return hasattr(value, "iterations") and hasattr(value, "apply_gradients")


def _variables(optimizer: Any) -> list[Any]:
    variables = optimizer.variables
    return list(variables() if callable(variables) else variables)


def _is_variable(value: object) -> bool:
    """A framework variable: Keras' and TensorFlow's (which a ``tf.random.Generator`` holds)."""
    return callable(getattr(value, "assign", None)) and callable(getattr(value, "numpy", None))


def _reachable_variables(value: Any, seen: set[int], depth: int) -> Iterator[Any]:
    """Variables held by ``value``'s attributes, lists, tuples and dicts, depth first."""
    if depth > _MAX_DEPTH or isinstance(value, _ATOMS) or id(value) in seen:
        return
    seen.add(id(value))
    if _is_variable(value):
        yield value  # its own attributes are its value: not walked
        return
    if isinstance(value, dict):
        children: Iterable[Any] = list(value.values())
    elif isinstance(value, list | tuple | set | frozenset):
        children = list(value)
    elif _is_framework_object(value):
        children = [v for k, v in vars(value).items() if k not in _SKIPPED_ATTRIBUTES]
    else:
        return
    for child in children:
        yield from _reachable_variables(child, seen, depth + 1)


def _is_framework_object(value: object) -> bool:
    """An object of Keras or TensorFlow, or of a subclass of one (the person's model, layer or
    ``train_step`` holder): the walk goes into these only, never into the person's data."""
    if not hasattr(value, "__dict__") or (callable(value) and not hasattr(value, "variables")):
        return False
    if type(value).__module__.startswith(_STATELESS_MODULES):
        return False
    return any(
        (klass.__module__ or "").split(".")[0] in ("keras", "tf_keras", "tensorflow")
        for klass in type(value).__mro__
    )
