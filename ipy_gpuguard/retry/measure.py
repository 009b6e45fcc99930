"""Measuring a batch size with the guard's own training calls, never through the person's cell.

A search needs to know whether a size fits, and how much memory it takes, without training the
model at that size for good. It used to find out by running the cell and ending its ``fit``
with an exception after a few steps: everything between the raise and the guard saw it (the
person's ``except`` and ``finally``, code after a short ``fit``, other threads' fits,
``%%capture``). Now, as Lightning's tuner runs its own calls of the training loop rather than the
user's script, the guard calls ``fit`` itself, on the person's model with the data the cell's
``fit`` received, for ``1 + PROBE_STEPS`` steps at the size (the first traces the step), with
one validation step when the cell's ``fit`` validates, and puts back everything that trained.
Its errors are caught in the guard's own frame; nothing of the cell runs.

A size fits only when its steps ran to the end and the framework's pending work was waited for
(JAX dispatches asynchronously: an out-of-memory error may surface only when a value is read).
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Any

from .outcome import RunOutcome
from .own_attributes import library_attribute, sequence_items
from .state import KeptState

#: Training steps a probe runs after the first (which traces the step function).
PROBE_STEPS = 3


@dataclass(frozen=True)
class FitCall:
    """A Keras ``fit`` as the cell called it: what the guard's own calls train with."""

    model: Any
    x: Any
    y: Any
    sample_weight: Any
    class_weight: Any
    #: ``(x, y, sample_weight)`` of its validation, when the validation batch is the fit's.
    validation: tuple[Any, Any, Any] | None
    samples: int

    @classmethod
    def of(cls, model: Any, arguments: Mapping[str, Any]) -> FitCall | None:
        """The call of ``fit`` on ``model`` with ``arguments`` (its parameters as ``fit`` holds
        them when training begins); ``None`` when its data batches itself (a dataset, a
        generator, a ``PyDataset``), which the guard cannot re-batch."""
        x, y = arguments.get("x"), arguments.get("y")
        samples = samples_of(x, y, arguments.get("sample_weight"))
        if samples is None:
            return None
        return cls(
            model,
            x,
            y,
            arguments.get("sample_weight"),
            arguments.get("class_weight"),
            _validation(arguments),
            samples,
        )


def samples_of(*parts: Any) -> int | None:
    """The number of samples of arrays (or nested lists, tuples and dicts of arrays) that all
    have the same first dimension; ``None`` for data that batches itself."""
    leaves = arrays_of(*parts)
    if leaves is None:
        return None
    lengths = {_first_dimension(leaf) for leaf in leaves}
    if len(lengths) != 1 or None in lengths:
        return None
    (length,) = lengths
    return length


def arrays_of(*parts: Any) -> list[Any] | None:
    """The arrays of array libraries that ``parts`` (arrays, or nested lists, tuples and dicts
    of them) hold; ``None`` where any part holds something else (data that batches itself)."""
    leaves: list[Any] = []
    for part in parts:
        if part is not None and not _collect(part, leaves):
            return None
    return leaves


def _collect(data: Any, leaves: list[Any]) -> bool:
    """Collect the arrays of ``data`` into ``leaves``; whether it held nothing else. A dict,
    list or tuple of the person's own subclass is read through the built-in's own methods, and
    its class through ``type``: their ``values``, ``__iter__`` or ``__class__`` never runs."""
    if issubclass(type(data), dict):
        return all(_collect(value, leaves) for value in dict.values(data))
    items = sequence_items(data)
    if items is not None:
        return bool(items) and all(_collect(value, leaves) for value in items)
    if _first_dimension(data) is None:
        return False
    leaves.append(data)
    return True


def _first_dimension(array: Any) -> int | None:
    """The length of an array library's array; ``None`` for anything else, whose ``shape``
    (a property of the person's, their ``__getattr__``) the guard must not run."""
    shape = library_attribute(array, "shape")
    try:
        first = shape[0] if shape is not None and len(shape) > 0 else None
    except TypeError:
        return None
    index = getattr(first, "__index__", None)
    return int(index()) if callable(index) else None


def _validation(arguments: Mapping[str, Any]) -> tuple[Any, Any, Any] | None:
    """The validation arrays, when their batch follows the fit's (no batch size of their own)."""
    parts = sequence_items(arguments.get("validation_data"))
    if parts is None or not 2 <= len(parts) <= 3:
        return None
    if arguments.get("validation_batch_size") not in (None, arguments.get("batch_size")):
        return None
    vx, vy, *rest = parts
    weights = rest[0] if rest else None
    return (vx, vy, weights) if samples_of(vx, vy, weights) is not None else None


#: Says how a measurement's failure stands (out of memory, the estimate of what fits) on the
#: outcome it is given, and frees what the error pinned.
Judge = Callable[[BaseException, RunOutcome], RunOutcome]


@dataclass(frozen=True)
class PeakReader:
    """Reads the framework allocator's peak over one probe: ``reset`` before, ``read`` after;
    ``held``: the bytes it holds now, on the device whose peak ``read`` gives."""

    reset: Callable[[], None]
    read: Callable[[], int | None]
    held: Callable[[], int | None]


@dataclass
class Measurer:
    """The guard's own training calls that measure a size of one ``fit``.

    ``hold``: a block in which the person's Stop is held, then honoured (putting the model back
    is never cut in half); ``let_through``: a block in which it stops the training at once
    (even inside a hold). ``judge``: the diagnosis of a failure.

    The measurements train with the model's own step functions (``train_function``), whose
    traces the person's last run then reuses: step functions of the guard's own cost two traces
    more a search. (The guard's clear of Keras' session keeps what a retrace of them needs:
    :func:`~ipy_gpuguard.shell.reclaim.clear_keras_session`.)
    """

    peak: PeakReader
    judge: Judge
    hold: Callable[[], AbstractContextManager[Any]]
    let_through: Callable[[], AbstractContextManager[Any]]
    steps: int = PROBE_STEPS

    def measure(self, call: FitCall, size: int) -> RunOutcome:
        """Train ``call``'s model for ``1 + steps`` steps at ``size`` (and validate one step),
        then put back everything that trained; how it went, as an attempt's outcome."""
        with self.hold() as held:
            kept = KeptState.of([call.model])
        if getattr(held, "received", False):  # the person's Stop, as the model was kept
            return RunOutcome(finished=False, probed=True, interrupted=True)
        outcome = RunOutcome(finished=True, probed=True)
        noted = None
        try:
            self.peak.reset()
            with self.let_through() as noted:
                _train(call, size, 1 + self.steps)
            # What the allocator holds after the steps (weights, optimizer slots, the person's
            # other tensors): the part of the peak that does not grow with the batch, as the
            # forecast counts it.
            outcome = replace(outcome, peak_bytes=self.peak.read(), fixed_bytes=self.peak.held())
        except KeyboardInterrupt:
            outcome = replace(outcome, finished=False, interrupted=True)
        except Exception as error:
            outcome = self.judge(error, outcome)
            del error
        finally:
            with self.hold() as held:
                kept.restore()
        # A Stop that landed in the framework's native code may come out as its own error (a
        # pybind11 "MISMATCH ... REPLACED BY KeyboardInterrupt"): it was a Stop all the same.
        if getattr(noted, "received", False) or getattr(held, "received", False):
            outcome = replace(outcome, finished=False, interrupted=True, error=None)
        return outcome


def _train(call: FitCall, size: int, steps: int) -> None:
    """The probe itself: the guard's ``fit`` (and ``evaluate``) calls, quiet, with none of the
    person's callbacks; the framework's pending work waited for."""
    model = call.model
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "input ran out of data", retracing: not the person's
        model.fit(
            call.x,
            call.y,
            batch_size=size,
            epochs=1,
            steps_per_epoch=min(steps, math.ceil(call.samples / size)),
            shuffle=False,
            verbose=0,
            sample_weight=call.sample_weight,
            class_weight=call.class_weight,
        )
        if call.validation is not None:
            vx, vy, weights = call.validation
            model.evaluate(vx, vy, sample_weight=weights, batch_size=size, steps=1, verbose=0)
    _wait_for_pending_work(model)


def _wait_for_pending_work(model: Any) -> None:
    """JAX: wait for the values the probe computed, so that an error JAX holds back raises here."""
    jax = sys.modules.get("jax")
    if jax is None:
        return
    values = [getattr(variable, "value", variable) for variable in model.variables]
    jax.block_until_ready(values)
