"""A probe: one run of the cell that a search ends after a few training steps, and undoes.

Memory peaks in the first steps of a ``fit``: the first traces the step function (and is not
counted), the next few run it at the size being tried. So a search does not need each size to
train to the end. The Keras heartbeat (:mod:`ipy_gpuguard.watchdog.keras_hooks`) tells the probe
when a ``fit`` begins and each step ends; after :data:`PROBE_STEPS` it ends the run by raising
:class:`ProbeEnded`, through one validation step when the ``fit`` validates.

What the probe trained is put back: when a ``fit`` begins, the probe keeps the values of the
model's variables (weights, non-trainable state, random-seed state) and of its optimizers'
(slots and step count) in host memory, and restores them once the run has ended, however it
ended. Host memory, not the device: a copy on the device would be part of the peak the probe
measures, and would shrink the size it finds. The cost is one copy of that state per probe,
which :class:`KeptTraining` measures.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..watchdog.keras_hooks import is_one_shot

#: Training steps a probe runs after the first (which traces the step function).
PROBE_STEPS = 3


class SearchEnd(enum.Enum):
    """How a guarded cell's search for its largest batch ended, for the cell's own result."""

    NONE = "none"  # no search ran (at most one was offered)
    FIXED = "fixed"  # its last run, a whole run that fits, is the cell's
    STOPPED = "stopped"  # the person's Stop ended it
    UNFINISHED = "unfinished"  # it ended without a whole run that fits


class ProbeEnded(BaseException):
    """The guard ended a probe on purpose. A ``BaseException``, like ``KeyboardInterrupt``, so
    that the person's ``except Exception`` never takes it for an error of theirs; never shown."""


@dataclass
class KeptTraining:
    """The values of everything a ``fit`` of ``model`` changes, kept in host memory."""

    model: Any
    values: list[tuple[Any, Any]]
    nbytes: int
    seconds: float

    @classmethod
    def of(cls, model: Any) -> KeptTraining:
        import numpy as np  # the model's framework has imported it already

        started = time.perf_counter()
        # numpy() (Keras 3's variables and TensorFlow's have it) then a copy that owns its data:
        # the framework may hand out a view of its buffer.
        values = [(variable, np.array(variable.numpy())) for variable in _trained_state(model)]
        nbytes = sum(value.nbytes for _, value in values)
        return cls(model, values, nbytes, time.perf_counter() - started)

    def restore(self) -> None:
        for variable, value in self.values:
            variable.assign(value)


def _trained_state(model: Any) -> list[Any]:
    """The model's variables and those of every optimizer it holds (a GAN's two, say), once
    each. Keras 2 creates an optimizer's slots at its first step: those made during the probe
    are not among them."""
    optimizers = [getattr(model, "optimizer", None)]
    optimizers += [value for value in vars(model).values() if _is_optimizer(value)]
    state: dict[int, Any] = {}
    for variable in [*model.variables, *(v for o in optimizers if o for v in _variables(o))]:
        state.setdefault(id(variable), variable)
    return list(state.values())


def _is_optimizer(value: object) -> bool:
    return hasattr(value, "iterations") and hasattr(value, "apply_gradients")


def _variables(optimizer: Any) -> list[Any]:
    variables = optimizer.variables
    return list(variables() if callable(variables) else variables)


def replicas_of(model: Any) -> int:
    """The replicas a ``tf.distribute`` strategy splits the model's batches across (1 without
    one): under ``MirroredStrategy`` the batch in the cell is the global batch."""
    strategy = getattr(model, "distribute_strategy", None)
    replicas = getattr(strategy, "num_replicas_in_sync", 1)
    return replicas if isinstance(replicas, int) and replicas > 1 else 1


def forget_cached_validation(model: Any) -> None:
    """Drop the validation iterator Keras 3 on TensorFlow caches on the model during a ``fit``
    and deletes only when the ``fit`` completes: after a run that ended early it would serve
    the next ``fit`` batches of the old size."""
    if getattr(model, "_eval_epoch_iterator", None) is not None:
        model._eval_epoch_iterator = None


@dataclass
class FitProbe:
    """What one attempt of a search saw of its ``fit`` calls, and the state they changed.

    ``steps`` ``None``: the attempt is a whole run, only watched (whether it fitted a Keras
    model); otherwise it ends after ``1 + steps`` training steps. ``defined_before`` tells the
    objects the namespace held before the search, whose consumption outlives it.
    """

    steps: int | None = PROBE_STEPS
    defined_before: Callable[[object], bool] = lambda value: False
    train_steps: int = 0
    ended: bool = False
    saw_fit: bool = False
    kept: list[KeptTraining] = field(default_factory=list)
    consumed_input: str | None = None  # the type of a one-shot input of an earlier cell
    trained_earlier_model: bool = False  # a fit trained a model the namespace held before
    one_batch: bool = False  # a fit's epoch was one batch: the batch holds all the data
    replicas: int = 1  # the most a fit's tf.distribute strategy split its batch across

    @property
    def ends_runs(self) -> bool:
        return self.steps is not None

    @property
    def probed(self) -> bool:
        """Whether it ends runs and saw a ``fit`` to end: what its run trained is put back.
        A run without a ``fit`` (a custom loop) ran whole, probe or not."""
        return self.ends_runs and self.saw_fit

    def fit_began(self, model: Any, fit_input: Any, epoch_steps: int | None) -> None:
        self.saw_fit = True
        self.one_batch = self.one_batch or epoch_steps == 1
        self.replicas = max(self.replicas, replicas_of(model))
        self.trained_earlier_model = self.trained_earlier_model or self.defined_before(model)
        forget_cached_validation(model)
        if self.steps is None:
            return
        if not any(kept.model is model for kept in self.kept):
            self.kept.append(KeptTraining.of(model))
        if is_one_shot(fit_input) and self.defined_before(fit_input):
            self.consumed_input = type(fit_input).__name__

    def train_step_ended(self) -> bool:
        if self.steps is None or self.ended:  # only a probe that ends runs is told of steps
            return False
        self.train_steps += 1
        self.ended = self.train_steps > self.steps
        return self.ended

    def ending(self) -> ProbeEnded:
        return ProbeEnded(f"the guard ended this probe after {self.train_steps} training steps")

    def restore(self) -> None:
        """Put back what the run trained; a whole run's training stays."""
        if self.steps is None:
            return
        for kept in self.kept:
            forget_cached_validation(kept.model)
            kept.restore()

    @property
    def kept_bytes(self) -> int:
        return sum(kept.nbytes for kept in self.kept)
