"""XLA's analysis of Keras 3's train step on JAX, as the compiled forecast asks it: a real step
compiled in a process of its own (Keras chooses its backend once, at import)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parent.parent.parent

ANALYSES = """
import json, sys
sys.path.insert(0, {root!r})
import numpy as np, keras
from ipy_gpuguard.retry import compiled_step

x = np.zeros((64, 16, 16, 3), "float32")
y = np.zeros((64,), "int32")
model = keras.Sequential([keras.Input((16, 16, 3)), keras.layers.Conv2D(8, 3),
                          keras.layers.BatchNormalization(), keras.layers.GlobalAveragePooling2D(),
                          keras.layers.Dense(10)])
model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x, y, batch_size=8, epochs=1, steps_per_epoch=1, verbose=0)
needs = {{}}
for options in ("analysis only", "XLA's defaults"):
    if options == "XLA's defaults":
        compiled_step.ANALYSIS_ONLY = {{}}
    needs[options] = [compiled_step.step_need_bytes(model, x, y, size) for size in (32, 96)]
print("NEEDS", json.dumps(needs))
"""


def printed_on_jax(script: str, marker: str) -> Any:
    """Run ``script`` (its ``{root}`` filled) in a process of its own with Keras on JAX, and
    read back the JSON it printed after ``marker``."""
    env = {**os.environ, "KERAS_BACKEND": "jax"}
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script).format(root=str(ROOT))],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    lines = [line for line in run.stdout.splitlines() if line.startswith(f"{marker} ")]
    assert lines, run.stderr[-3000:]
    return json.loads(lines[0].removeprefix(f"{marker} "))


@pytest.mark.tensorflow
def test_compiling_for_analysis_only_leaves_xlas_figures_as_they_are():
    """The machine code goes unoptimised (it never runs), which must not move a byte of what
    XLA says the step needs."""
    needs = printed_on_jax(ANALYSES, "NEEDS")
    small, large = needs["analysis only"]
    assert large > small > 0
    assert needs["analysis only"] == needs["XLA's defaults"]


PERSONS_CONTAINERS = """
import json, sys
sys.path.insert(0, {root!r})
import numpy as np, keras
from ipy_gpuguard.retry import compiled_step

noted = []

class Pair(tuple):  # the person's tuple of inputs: its methods note each call
    def __new__(cls, items):
        noted.append("__new__")
        return super().__new__(cls, items)
    def __iter__(self):
        noted.append("__iter__")
        return super().__iter__()

class Labels:  # the person's labels: no array library's, with properties of its own
    @property
    def shape(self):
        noted.append("shape")
        return (64,)
    @property
    def dtype(self):
        noted.append("dtype")
        return np.dtype("int32")

first, second = keras.Input((4,)), keras.Input((6,))
out = keras.layers.Dense(1)(keras.layers.Concatenate()([first, second]))
model = keras.Model([first, second], out)
model.compile("adam", "mse")
x = Pair((np.zeros((64, 4), "float32"), np.zeros((64, 6), "float32")))
y = np.zeros((64, 1), "float32")
model.fit(list(tuple.__iter__(x)), y, batch_size=8, epochs=1, steps_per_epoch=1, verbose=0)
noted.clear()
need = compiled_step.step_need_bytes(model, x, y, 32)
try:
    compiled_step.step_need_bytes(model, x, Labels(), 32)
    refused = False
except TypeError:
    refused = True
print("SEEN", json.dumps({{"need": need, "refused": refused, "noted": noted}}))
"""


@pytest.mark.tensorflow
def test_the_persons_containers_and_labels_are_read_without_their_code():
    """A tuple of inputs of the person's own subclass is read through ``tuple``'s methods (a
    namedtuple's ``__new__`` takes its fields, not an iterable), and labels of no array
    library are refused, their ``shape`` and ``dtype`` never asked."""
    seen = printed_on_jax(PERSONS_CONTAINERS, "SEEN")
    assert seen["need"] > 0
    assert seen["refused"]
    assert seen["noted"] == []


KEPT_CODE = """
import json, sys
sys.path.insert(0, {root!r})
import keras
from ipy_gpuguard.retry import compiled_step

def act(t):  # the person's own functions and classes, each kept by a Keras object
    return keras.activations.relu(t)

def penalty(weights):
    return 0.01 * keras.ops.sum(weights)

def close(y_true, y_pred):
    return keras.ops.mean(keras.ops.abs(y_true - y_pred))

class Schedule(keras.optimizers.schedules.LearningRateSchedule):
    def __call__(self, step):
        return 0.01

def model(*layers, optimizer="adam", metrics=()):
    built = keras.Sequential([keras.Input((8,)), *layers, keras.layers.Dense(1)])
    built.compile(optimizer, "mse", metrics=list(metrics))
    return built

def mapped(inputs):
    return keras.ops.map(act, inputs)

def functional(through):
    inputs = keras.Input((8,))
    built = keras.Model(inputs, keras.layers.Dense(1)(through(inputs)))
    built.compile("adam", "mse")
    return built

from keras.src.losses.losses import LossFunctionWrapper  # Keras' own wrapper of a function

twice_wrapped = LossFunctionWrapper(LossFunctionWrapper(close))

seen = {{
    "keras alone": model(keras.layers.Dense(4, activation="relu"), metrics=["mae"]),
    "keras ops": functional(lambda x: keras.ops.add(x, keras.ops.mean(x))),
    "ops.map": functional(mapped),
    "loss wrapped twice": model(),
    "activation": model(keras.layers.Dense(4, activation=act)),
    "Lambda": model(keras.layers.Lambda(act)),
    "regularizer": model(keras.layers.Dense(4, kernel_regularizer=penalty)),
    "schedule": model(optimizer=keras.optimizers.SGD(learning_rate=Schedule())),
    "metric": model(metrics=[keras.metrics.MeanMetricWrapper(close)]),
}}
seen["loss wrapped twice"].compile("adam", twice_wrapped)
keras.mixed_precision.set_global_policy("mixed_float16")  # Keras wraps the optimizer in its own
seen["mixed precision"] = model(keras.layers.Dense(4))
seen["schedule, mixed precision"] = model(optimizer=keras.optimizers.SGD(learning_rate=Schedule()))
print("KERAS_ONLY", json.dumps({{name: compiled_step.keras_only(m) for name, m in seen.items()}}))
"""


@pytest.mark.tensorflow
def test_a_model_that_keeps_a_function_of_the_persons_is_never_traced_by_the_guard():
    """Tracing the step runs every function a layer, the optimizer or a metric keeps, however
    deep: an activation, a ``Lambda``'s function, a regularizer, a schedule or a metric of the
    person's (also inside Keras' own wrappers, or mapped by an op of the graph) would run once
    more for each size XLA is asked, so such a model gets no compiled forecast."""
    assert printed_on_jax(KEPT_CODE, "KERAS_ONLY") == {
        "keras alone": True,
        "keras ops": True,
        "mixed precision": True,
        "ops.map": False,  # the graph's node keeps the function it maps
        "loss wrapped twice": False,
        "schedule, mixed precision": False,  # inside Keras' LossScaleOptimizer
        "activation": False,
        "Lambda": False,
        "regularizer": False,
        "schedule": False,
        "metric": False,
    }


PATCHED = """
import functools, json, sys
sys.path.insert(0, {root!r})
import jax, keras, numpy as np
from keras.src.backend.common.stateless_scope import StatelessScope
from ipy_gpuguard.retry import compiled_step
from ipy_gpuguard.retry.trace_guard import PersonsCode

calls = []

def counted(original):
    def persons(*args, **kwargs):  # the person's code: it counts each run
        calls.append(1)
        return original(*args, **kwargs)
    return persons

class Counting:  # a descriptor of the person's
    def __init__(self, original):
        self.original = original
    def __get__(self, instance, owner=None):
        calls.append(1)
        return self.original.__get__(instance, owner)

class their_property(property):
    pass

trainer = next(k for k in keras.Model.__mro__ if "compute_loss" in vars(k))
holder = next(k for k in keras.layers.Dense.__mro__ if "trainable_variables" in vars(k))
compute_loss, variables = vars(trainer)["compute_loss"], vars(holder)["trainable_variables"]
reset = vars(keras.layers.Layer)["_maybe_reset_call_context"]
patches = {{
    "a method of Keras' class": [(trainer, "compute_loss", counted(compute_loss))],
    "a descriptor": [(trainer, "compute_loss", Counting(compute_loss))],
    "a partialmethod": [(trainer, "compute_loss", functools.partialmethod(counted(compute_loss)))],
    "a property subclass": [(holder, "trainable_variables", their_property(counted(variables.fget)))],
    "a function of jax.nn": [(jax.nn, "relu", counted(jax.nn.relu))],
    "a class Keras makes in the step": [(StatelessScope, "__enter__", counted(StatelessScope.__enter__))],
    # the second is called by Layer.__call__'s finally, as the stop at the first unwinds
    "a second patch a library's finally calls": [(jax.nn, "relu", counted(jax.nn.relu)),
                                                  (keras.layers.Layer, "_maybe_reset_call_context",
                                                   counted(reset))],
    # stopped as the stop at the first unwinds, Keras' own __exit__ never runs in the trace
    "a wrapper of a library's cleanup": [(jax.nn, "relu", counted(jax.nn.relu)),
                                         (StatelessScope, "__exit__",
                                          counted(StatelessScope.__exit__))],
    "a wrapper of a library's cleanup, reached first": [(StatelessScope, "__exit__",
                                                         counted(StatelessScope.__exit__))],
}}

def fit(patch, watched):
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4, activation="relu"),
                              keras.layers.Dense(1)])
    model.compile("adam", "mse")
    x = np.random.default_rng(0).random((64, 8), dtype="float32")
    seen = {{}}
    class Forecast(keras.callbacks.Callback):  # where the guard makes its compiled forecast
        def on_train_begin(self, logs=None):
            before = len(calls)
            try:
                seen["bytes"] = compiled_step.step_need_bytes(model, x, x[:, :1], 16)
            except PersonsCode as error:
                seen["refused"] = str(error)
            seen["ran"] = len(calls) - before
    kept = [(owner, name, vars(owner)[name]) for owner, name, _ in patches.get(patch, [])]
    for owner, name, replacement in patches.get(patch, []):
        setattr(owner, name, replacement)
    calls.clear()
    try:
        model.fit(x, x[:, :1], batch_size=16, epochs=1, verbose=0,
                  callbacks=[Forecast()] if watched else [])
    finally:
        for owner, name, original in kept:
            setattr(owner, name, original)
    seen["calls"] = len(calls)
    seen["weights"] = [w.tolist() for w in model.get_weights()]
    return seen

results = {{}}
for patch in [None, *patches]:
    watched, alone = fit(patch, True), fit(patch, False)
    results[str(patch)] = {{
        "forecast": "bytes" in watched,
        "ran in the trace": watched["ran"],
        "said": watched.get("refused", ""),
        "same run as without the guard": (watched["calls"], watched["weights"])
        == (alone["calls"], alone["weights"]),
    }}

previous = lambda frame, event, arg: None  # a profiler of the person's on this thread
sys.setprofile(previous)
results["profiled"] = fit(None, True).get("refused", "")
results["profiler kept"] = sys.getprofile() is previous
sys.setprofile(None)
print("PATCHED", json.dumps(results))
"""


@pytest.mark.tensorflow
def test_code_of_the_persons_patched_into_keras_or_jax_never_runs_in_the_guards_trace():
    """The model's pieces are Keras' own, but the person patched Keras or JAX (helper 19: a
    method of a Keras class, a descriptor, a ``partialmethod``, a ``property`` subclass, a
    function of ``jax.nn`` a layer looks up as it runs, a class Keras only makes inside the
    step): their code ran in the guard's trace, up to 5 times a size. The trace is now stopped
    before their code's first line, the forecast is left to the first steps, and the fit runs
    as it would without the guard (the same calls of their code, the same weights). A second
    patch that Keras calls as the stop unwinds is stopped too (helper 20: it ran on Python 3.11,
    where Python took the watch off with the stop). Where that patch wraps Keras' cleanup of a
    scope, the scope is left open, on the trace's own thread (helper 21: on the fit's thread,
    the fit then failed with JAX's ``UnexpectedTracerError``)."""
    results = printed_on_jax(PATCHED, "PATCHED")
    unpatched = results.pop("None")
    assert unpatched == {
        "forecast": True,
        "ran in the trace": 0,
        "said": "",
        "same run as without the guard": True,
    }
    profiled, kept = results.pop("profiled"), results.pop("profiler kept")
    assert profiled == "a profiler watches this thread"
    assert kept
    for patch, seen in results.items():
        assert not seen["forecast"], patch
        assert seen["ran in the trace"] == 0, patch
        assert seen["said"].startswith("the trace reached code of the person's"), patch
        assert seen["same run as without the guard"], patch


DATA_PARALLEL = """
import json, os, sys
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
sys.path.insert(0, {root!r})
import keras, numpy as np
from ipy_gpuguard.retry import compiled_step

keras.distribution.set_distribution(keras.distribution.DataParallel())
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                          keras.layers.Dense(1)])
model.compile("adam", "mse")
x, y = np.zeros((64, 8), "float32"), np.zeros((64, 1), "float32")
model.fit(x, y, batch_size=8, epochs=1, steps_per_epoch=1, verbose=0)
print("SPREAD", json.dumps([compiled_step.keras_only(model),
                            compiled_step.step_need_bytes(model, x, y, 32)]))
"""


@pytest.mark.tensorflow
def test_a_model_spread_over_devices_by_keras_distribution_is_traced():
    """Under ``keras.distribution.DataParallel`` the optimizer's variables hold JAX's device
    mesh, a callable object of JAX's: it is the backend's, not the person's (helper 20)."""
    only, need = printed_on_jax(DATA_PARALLEL, "SPREAD")
    assert only is True
    assert need > 0


ON_A_DEVICE = """
import functools, json, os, sys
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
sys.path.insert(0, {root!r})
import jax, keras, numpy as np
from ipy_gpuguard.retry import compiled_step
from ipy_gpuguard.retry.thread_state import ThreadState
from ipy_gpuguard.retry.trace_guard import without_persons_code

model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4), keras.layers.Dense(1)])
model.compile("adam", "mse")
x = np.zeros((64, 8), "float32")
seen = {{}}

class Forecast(keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        lower = functools.partial(
            compiled_step._lowered, jax, model, x, x[:, :1], 16, ThreadState.of_this_thread()
        )
        for where, lowered in (("the fit's thread", lower()),
                               ("the trace's", without_persons_code(lower, compiled_step.TRACED))):
            seen[where] = str(lowered.compile().input_shardings[0][0][0])

with keras.device("cpu:1"):
    model.fit(x, x[:, :1], batch_size=16, epochs=1, verbose=0, callbacks=[Forecast()])
print("DEVICE", json.dumps(seen))
"""


@pytest.mark.tensorflow
def test_the_step_is_traced_for_the_device_the_fit_runs_on():
    """``keras.device`` sets JAX's default device for the fit's thread only: the trace's own
    thread had lowered the step for the first device (helper 22), which on a GPU machine would
    be the GPU's program for a fit on the CPU."""
    seen = printed_on_jax(ON_A_DEVICE, "DEVICE")
    assert "id=1" in seen["the fit's thread"]
    assert seen["the trace's"] == seen["the fit's thread"]
