"""Reading a person's Keras objects without running any of their code.

A person's model, layer or callback may define ``__getattr__``, ``__getattribute__``, a
``__dict__`` property, or properties that shadow Keras' attributes (``layers``, ``output``,
``optimizer``); Keras 3's ``Callback.model`` property even writes the step's state back into the
model on JAX. An attribute looked up the ordinary way may run any of that on the guard's
account, and raise the guard's way into the person's ``fit``. What the guard reads of such an
object it reads from the instance dictionary, through the ``__dict__`` descriptor Python made
for the object's class, which no class of the person's can replace.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Mapping
from typing import Any


def instance_dict(value: Any) -> Mapping[str, Any]:
    """``value``'s own attributes, read through the ``__dict__`` descriptor Python made for its
    class (or a base's); empty for an object without one."""
    for klass in classes_of(value):
        descriptor = class_dict(klass).get("__dict__")
        if isinstance(descriptor, types.GetSetDescriptorType):
            state = descriptor.__get__(value)
            return state if isinstance(state, dict) else {}
    return {}


def classes_of(value: Any) -> tuple[type, ...]:
    """The classes ``value``'s attributes are looked up in, its class first: read through
    ``type``'s own descriptor, which a metaclass of the person's cannot replace."""
    return type.__dict__["__mro__"].__get__(type(value))  # type: ignore[no-any-return]


def class_dict(klass: type) -> Mapping[str, Any]:
    """What ``klass`` itself defines (its ``__module__``, its descriptors), read through
    ``type``'s own descriptor, which a metaclass of the person's cannot replace."""
    return type.__dict__["__dict__"].__get__(klass)  # type: ignore[no-any-return]


def sequence_items(data: Any) -> tuple[Any, ...] | None:
    """The items of a list or tuple, of the person's own subclass too, read through the
    built-in's own iteration (their ``__iter__`` never runs); ``None`` for anything else."""
    kind = type(data)
    if issubclass(kind, list):
        return tuple(list.__iter__(data))
    if issubclass(kind, tuple):
        return tuple(tuple.__iter__(data))
    return None


def contents(data: Any) -> tuple[Any, ...] | None:
    """The values of a dict, or the items of a list or tuple, of the person's own subclass too,
    read through the built-in's own methods (their ``values`` or ``__iter__`` never runs);
    ``None`` for anything else."""
    if issubclass(type(data), dict):
        return tuple(dict.values(data))
    return sequence_items(data)


def qualified_name(klass: type) -> str:
    """``module.QualName`` of ``klass``, read through ``type``'s own descriptors: a class
    written in C (NumPy's ``ndarray``) keeps its module in its name, not in its dictionary."""
    module = type.__dict__["__module__"].__get__(klass)
    return f"{module}.{type.__dict__['__qualname__'].__get__(klass)}"


#: The libraries whose arrays the guard reads the ``shape`` and ``dtype`` of: their code, not
#: the person's, answers.
ARRAY_LIBRARIES = frozenset({"numpy", "tensorflow", "jax", "jaxlib", "torch", "scipy", "pandas"})


def library_attribute(value: Any, name: str) -> Any:
    """``value``'s attribute ``name`` where the class that defines it is of one of
    :data:`ARRAY_LIBRARIES` (an array's ``shape``), read through that class's own descriptor;
    ``None`` where a class of the person's defines it (a property that may run anything and
    raise), or no class does (their ``__getattr__`` would answer)."""
    for klass in classes_of(value):
        attributes = class_dict(klass)
        if name not in attributes:
            continue
        if not defined_in(klass, ARRAY_LIBRARIES):
            return None
        attribute = attributes[name]
        getter = getattr(type(attribute), "__get__", None)
        return getter(attribute, value, klass) if getter is not None else attribute
    return None


def defined_in(klass: type, libraries: frozenset[str]) -> bool:
    """Whether ``klass`` is one of ``libraries``' own classes: its module is one of theirs,
    imported, and names ``klass`` itself at its qualified name. A class of the person's may
    set its ``__module__`` to ``"numpy"`` or ``"keras"`` (even a ``str`` of their own); the
    library does not name it."""
    module = type.__dict__["__module__"].__get__(klass)
    name = type.__dict__["__qualname__"].__get__(klass)
    if type(module) is not str or type(name) is not str:
        return False
    if module.partition(".")[0] not in libraries:
        return False
    imported = sys.modules.get(module)
    if not issubclass(type(imported), types.ModuleType):
        return False
    scope: Mapping[str, Any] = vars(imported)
    named = None
    for part in name.split("."):
        if named is not None:
            if not issubclass(type(named), type):
                return False
            scope = class_dict(named)
        named = scope.get(part)
    return named is klass


def defines(kind: type, name: str) -> bool:
    """Whether ``kind`` or a base defines ``name`` (not as ``None``): asked of the classes'
    own dictionaries, as Python looks a special method up; no hook of the person's runs."""
    for klass in type.__dict__["__mro__"].__get__(kind):
        attributes = class_dict(klass)
        if name in attributes:
            return attributes[name] is not None
    return False


def replicas_of(model: Any) -> int:
    """The replicas a ``tf.distribute`` strategy splits the model's batches across (1 without
    one): under ``MirroredStrategy`` the batch in the cell is the global batch.

    What Keras' ``distribute_strategy`` property returns, read without it: the strategy the
    model was built under (Keras 3 ``_distribute_strategy``, Keras 2 ``_distribution_strategy``),
    else the one whose scope the ``fit`` runs in.
    """
    state = instance_dict(model)
    strategy = state.get("_distribute_strategy", state.get("_distribution_strategy"))
    if strategy is None:
        distribute = getattr(sys.modules.get("tensorflow"), "distribute", None)
        current = getattr(distribute, "get_strategy", None)
        strategy = current() if callable(current) else None
    replicas = getattr(strategy, "num_replicas_in_sync", 1)
    return replicas if isinstance(replicas, int) and replicas > 1 else 1
