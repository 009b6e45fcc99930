"""What Keras 3's train step needs at a batch size it has not run, from XLA's own analysis.

On JAX, Keras compiles its train step with XLA, and XLA's buffer assignment states the
compiled program's memory without running it: ``jax.jit(...).lower(specs).compile()
.memory_analysis()``. The step is lowered with the *shapes and dtypes* of the model's state and
of one batch (``jax.ShapeDtypeStruct``), never with their values: nothing of the person's model
or data is read, changed or run. Its need is the arguments and outputs (less those that alias:
the state is donated and updated in place) plus XLA's temporary buffers; the ``peak`` field alone
counts only arguments and outputs on XLA's CPU backend, whatever the step's work needs (measured
here: 17.6 MB "peak" against 80 MB of temporaries for a small convolutional step at batch 64).

Lowering traces the step: the Python of every layer's ``call``, of the loss, the metrics and
the train step runs once more. That is Keras' own code only where :func:`keras_only` says so;
a model with a layer, loss, metric or train step of the person's is never traced by the guard
(their code runs exactly as often as without it), and gets the forecast from its first steps.
Code of theirs the model's pieces do not show (a patch of Keras or JAX) is stopped before it
runs (:mod:`.trace_guard`), and that model gets the forecast from its first steps too.

Only the framework the person imported is used (``sys.modules``); nothing is imported here.
"""

from __future__ import annotations

import inspect
import os
import sys
import types
from typing import Any

from .own_attributes import (
    contents,
    defined_in,
    defines,
    instance_dict,
    library_attribute,
    qualified_name,
    sequence_items,
)
from .thread_state import ThreadState
from .trace_guard import without_persons_code

#: XLA's options for a program compiled only to be analysed, never run: no optimisation of the
#: machine code, which comes after buffer assignment and leaves the analysis as it is (the same
#: figures for all 19 models of the bench at two sizes, in 60% of the compile time).
ANALYSIS_ONLY = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}
#: The library whose objects alone a model traced by the guard may hold.
KERAS = frozenset({"keras"})
#: The packages whose code (and their requirements') a trace of the step may run: Keras, its
#: backend, the frameworks whose data Keras reads when they are imported (``tf.data``, a torch
#: ``DataLoader``; Keras asks TensorFlow whether it executes eagerly), and the kernel's, which
#: a warning or a log line of the trace is written through (ipykernel's streams).
TRACED = ("keras", "jax", "tensorflow", "torch", "IPython", "ipykernel")
#: The backend whose objects a Keras object may hold besides Keras' own (a device mesh under
#: ``keras.distribution``): its code is watched as the step is traced.
BACKEND = frozenset({"jax", "jaxlib"})
#: What JAX gives a dtype that NumPy has wider: Keras feeds the step the narrower one.
_NARROWED = {"float64": "float32", "int64": "int32", "uint64": "uint32"}


def keras_on_jax(model: Any) -> bool:
    """The model trains with Keras 3 on JAX, whose train step XLA compiles."""
    keras = sys.modules.get("keras")
    backend = getattr(getattr(keras, "backend", None), "backend", None)
    train_step = inspect.getattr_static(model, "train_step", None)  # runs none of the person's
    return callable(backend) and backend() == "jax" and train_step is not None


def keras_only(model: Any) -> bool:
    """Every piece of Python that tracing the train step runs is Keras' own: the model's class
    (its ``call``, ``train_step``, ``compute_loss``), its layers, its optimizer, the loss and
    metrics it was compiled with (names, or Keras' objects and functions), and every function
    or callable object they hold (:func:`_holds_only_keras`). The model's class is asked first:
    of a class of the person's, nothing more is read."""
    if not _of_keras(model):
        return False
    layers = getattr(model, "_flatten_layers", None)
    if not callable(layers):
        return False
    compiled = getattr(getattr(model, "_compile_config", None), "config", {}) or {}
    pieces = [
        model,
        *layers(include_self=False),
        getattr(model, "optimizer", None),
        *_leaves([compiled.get(key) for key in ("loss", "metrics", "weighted_metrics")]),
    ]
    return all(_of_keras(piece) for piece in pieces) and _holds_only_keras(pieces)


def _leaves(value: Any) -> list[Any]:
    items = contents(value)
    if items is not None:
        return [leaf for item in items for leaf in _leaves(item)]
    return [] if value is None or issubclass(type(value), str) else [value]


def _holds_only_keras(pieces: list[Any]) -> bool:
    """Every function or callable object that Keras' objects in ``pieces`` hold is Keras' own,
    all the way down: their attributes (read from instance dictionaries), the lists, tuples and
    dicts there, and the Keras objects those hold in turn. An activation, a ``Lambda``'s
    function, a regularizer, a schedule or a metric's function is held by its layer, optimizer
    or metric; the person's optimizer by Keras' ``LossScaleOptimizer`` under mixed precision; the
    function of ``keras.ops.map`` by the functional graph's node that calls it."""
    seen: set[int] = set()
    waiting = list(pieces)
    while waiting:
        value = waiting.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        kind = type(value)
        items = contents(value)
        if items is not None:
            waiting += items
        elif not _of_keras(value):
            if defines(kind, "__call__") and not defined_in(kind, BACKEND):
                return False  # code of the person's (or of another library) the trace would run
        elif kind is types.MethodType:
            waiting.append(types.MethodType.__dict__["__self__"].__get__(value))
        elif kind is not types.FunctionType and not issubclass(kind, type):
            waiting += instance_dict(value).values()
    return True


def _of_keras(piece: Any) -> bool:
    """A class or a function defined in Keras, or an object of such a class (a subclass of a
    Keras class defined in the notebook is the person's, and so is a class that only says it
    is Keras')."""
    kind = type(piece)
    if kind is types.MethodType:
        method = types.MethodType.__dict__
        return _of_keras(method["__func__"].__get__(piece)) and _of_keras(
            method["__self__"].__get__(piece)
        )
    if kind is types.FunctionType:
        return _keras_function(piece)
    return defined_in(piece if issubclass(kind, type) else kind, KERAS)


def _keras_function(function: types.FunctionType) -> bool:
    """A function whose code lies in Keras' files, and so does the one it wraps, if any
    (Keras keeps a layer's ``build`` wrapped in its instance): Keras' own closures, which its
    module does not name, count; a function of the person's that says it is Keras' does not."""
    keras = sys.modules.get("keras")
    home = getattr(keras, "__file__", None)
    if not isinstance(home, str):
        return False
    function_attributes = types.FunctionType.__dict__
    code = function_attributes["__code__"].__get__(function)
    if not code.co_filename.startswith(os.path.dirname(home) + os.sep):
        return False
    wrapped = function_attributes["__dict__"].__get__(function).get("__wrapped__")
    return wrapped is None or _of_keras(wrapped)


def step_need_bytes(model: Any, x: Any, y: Any, batch: int) -> int:
    """The bytes the model's compiled train step needs at ``batch``: XLA's arguments and
    outputs, less what they alias, plus its temporaries. :class:`.trace_guard.PersonsCode`
    where reading the model's state or tracing its step would have run code of the person's."""
    jax = sys.modules["jax"]
    fits_thread = ThreadState.of_this_thread()
    lowered = without_persons_code(lambda: _lowered(jax, model, x, y, batch, fits_thread), TRACED)
    try:
        compiled = lowered.compile(compiler_options=ANALYSIS_ONLY)
    except Exception:  # a JAX whose XLA does not take these options
        compiled = lowered.compile()
    memory = compiled.memory_analysis()
    return int(
        memory.argument_size_in_bytes
        + memory.output_size_in_bytes
        - memory.alias_size_in_bytes
        + memory.temp_size_in_bytes
    )


def _lowered(jax: Any, model: Any, x: Any, y: Any, batch: int, fits_thread: ThreadState) -> Any:
    """The train step lowered for the shapes of the model's state and of one batch, on the
    trace's thread, in the state of the fit's."""
    fits_thread.put_on_this_thread()
    step = jax.jit(model.train_step, donate_argnums=0)  # as Keras jits it
    state = (
        _specs(jax, model.trainable_variables),
        _specs(jax, model.non_trainable_variables),
        _specs(jax, model.optimizer.variables),
        _specs(jax, model.metrics_variables),
    )
    return step.lower(state, (_batch_spec(jax, x, batch), _batch_spec(jax, y, batch)))


def _specs(jax: Any, variables: Any) -> list[Any]:
    return [jax.ShapeDtypeStruct(tuple(v.shape), v.dtype) for v in variables]


def _batch_spec(jax: Any, data: Any, batch: int) -> Any:
    """One batch of ``data`` (an array library's array, or a list, tuple or dict of them) as
    shapes. A container of the person's own subclass is read through the built-in's methods
    and its shapes made into the built-in: none of their methods runs, not even ``__init__``."""
    if data is None:
        return None
    kind = type(data)
    if issubclass(kind, dict):
        return {key: _batch_spec(jax, value, batch) for key, value in dict.items(data)}
    items = sequence_items(data)
    if items is not None:
        specs = [_batch_spec(jax, value, batch) for value in items]
        return specs if issubclass(kind, list) else tuple(specs)
    shape, dtype = library_attribute(data, "shape"), library_attribute(data, "dtype")
    if shape is None or dtype is None:
        raise TypeError(f"{qualified_name(kind)} is no array the guard can read the shape of")
    name = str(library_attribute(dtype, "name") or dtype)
    return jax.ShapeDtypeStruct((batch, *tuple(shape[1:])), _NARROWED.get(name, name))
