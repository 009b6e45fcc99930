"""A heartbeat callback on every Keras ``fit``, ``evaluate`` and ``predict`` of one guarded cell.

The person writes nothing: while the cell runs, every ``CallbackList`` that Keras makes (one per
``fit``, ``evaluate`` and ``predict``; the validation inside ``fit`` shares its list) also holds a
:class:`HeartbeatCallback`, and when the cell ends, however it ends, Keras is put back.
Wrapping ``CallbackList`` rather than ``fit`` keeps the guard's frames out of the person's
traceback. For a retry's search, the callback also tells its :class:`FitWatcher` when a ``fit``
begins, with what it was given, and when it ends; it never ends a run nor raises into the
person's code. Only Keras modules the cell has imported are
touched: one the cell imports itself is wrapped as its import ends (an import hook, removed
with the callback), and the watchdog looks again at every tick; the guard never imports a
framework.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.abc
import inspect
import logging
import sys
import threading
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from importlib.machinery import ModuleSpec
from types import FrameType, ModuleType
from typing import Any, Protocol

from .progress import StepRecorder

log = logging.getLogger(__name__)

#: Keras 3 (which ``tf.keras`` is since TensorFlow 2.16), and Keras 2 as the ``tf_keras`` package.
KERAS_MODULES = ("keras", "tf_keras")
_PHASES = {"train": "fit", "test": "evaluate", "predict": "predict"}
_ABSENT = object()
#: The training steps of each ``fit`` a watcher hears the end of: the first builds the
#: optimizer's slots (what the allocator holds then is the fixed part), the second runs as every
#: later step will (the peak by then is the step's).
STEPS_TOLD = 2
#: How far up the stack the callback looks for the ``fit`` it serves (its data argument).
_FIT_FRAME_DEPTH = 24


class FitWatcher(Protocol):
    """What a retry's search notes of the ``fit`` calls of one run (``retry/probe.py``)."""

    def fit_began(self, model: Any, arguments: Mapping[str, Any], epoch_steps: int | None) -> None:
        """A ``fit`` of ``model`` begins with ``arguments`` (its parameters as ``fit`` holds
        them as training begins; empty if unseen), ``epoch_steps`` steps an epoch (``None``:
        until the data ends)."""

    def fit_ended(self, model: Any) -> None:
        """That ``fit`` ran to its end (a ``fit`` cut by an error never does)."""

    def step_ended(self, model: Any, step: int) -> None:
        """Training step ``step`` (from 1) of that ``fit`` ended: told of its first
        :data:`STEPS_TOLD` steps alone, never after the steps that follow; must never raise,
        since it runs inside the person's ``fit``."""

    def epoch_ended(self, model: Any, epoch: int) -> None:
        """An epoch of that ``fit`` ended (``epoch`` counts from 0); must never raise, since it
        runs inside the person's ``fit``."""


class FitWatchers:
    """Several watchers of the same ``fit`` calls, told in order: a search's and the forecast's.

    They are told from inside the person's ``fit``: an error of a watcher's (the guard's own)
    is logged and goes no further, never into the person's ``except`` or traceback.
    """

    def __init__(self, watchers: Sequence[FitWatcher | None]) -> None:
        self._watchers = tuple(watcher for watcher in watchers if watcher is not None)

    def fit_began(self, model: Any, arguments: Mapping[str, Any], epoch_steps: int | None) -> None:
        self._tell("fit_began", model, arguments, epoch_steps)

    def fit_ended(self, model: Any) -> None:
        self._tell("fit_ended", model)

    def step_ended(self, model: Any, step: int) -> None:
        self._tell("step_ended", model, step)

    def epoch_ended(self, model: Any, epoch: int) -> None:
        self._tell("epoch_ended", model, epoch)

    def _tell(self, what: str, *args: Any) -> None:
        for watcher in self._watchers:
            try:
                getattr(watcher, what)(*args)
            except Exception as error:  # the guard's own: never the person's fit's
                # debug, one line: a notebook's logging.basicConfig(level=INFO) would print it
                log.debug("a watcher of the cell's fit failed in %s: %r", what, error)


class KerasHooks:
    """Puts the heartbeat callback into the Keras modules already imported, and takes it out."""

    def __init__(
        self,
        recorder: StepRecorder,
        modules: MutableMapping[str, ModuleType] | None = None,
        watcher: FitWatcher | None = None,
    ) -> None:
        self._recorder = recorder
        self._watcher = watcher
        #: The thread that runs the cell (hooks are made as it starts): only its fits are the
        #: cell's training; a fit another thread of the person's runs meanwhile is not.
        self._cell_thread = threading.get_ident()
        self._modules = sys.modules if modules is None else modules
        self._lock = threading.Lock()
        self._patched: dict[str, tuple[type, object, object]] = {}
        self._finder = _AttachWhenImported(self._attach)

    def attach_new(self) -> None:
        """Wrap the ``CallbackList`` of every Keras module imported since the last call, and
        of a Keras module the cell imports from now on, as soon as its import ends."""
        for name in KERAS_MODULES:
            module = self._modules.get(name)
            if module is not None and not _still_importing(module):
                self._attach(name, module)
        waiting = not all(name in self._patched for name in KERAS_MODULES)
        if waiting and self._modules is sys.modules and self._finder not in sys.meta_path:
            sys.meta_path.insert(0, self._finder)

    def _attach(self, name: str, module: ModuleType) -> None:
        with self._lock:
            if name in self._patched:
                return
            callbacks = getattr(module, "callbacks", None)
            callback_list = getattr(callbacks, "CallbackList", None)
            base = getattr(callbacks, "Callback", None)
            if isinstance(callback_list, type) and isinstance(base, type):
                original = callback_list.__dict__.get("__init__", _ABSENT)
                wrapper = _with_heartbeat(
                    callback_list.__init__,  # type: ignore[misc]
                    heartbeat_callback_class(base),
                    self._recorder,
                    self._watcher,
                    self._cell_thread,
                    keras_2=name == "tf_keras"
                    or not str(getattr(module, "__version__", "")).startswith("3."),
                )
                callback_list.__init__ = wrapper  # type: ignore[misc]
                self._patched[name] = (callback_list, original, wrapper)

    def detach(self) -> None:
        """Put every wrapped method back (unless something else replaced it meanwhile)."""
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(self._finder)
        with self._lock:
            for owner, original, wrapper in self._patched.values():
                if owner.__dict__.get("__init__") is not wrapper:
                    continue
                if original is _ABSENT:
                    delattr(owner, "__init__")
                else:
                    owner.__init__ = original  # type: ignore[misc]
            self._patched.clear()


class _AttachWhenImported(importlib.abc.MetaPathFinder):
    """Attaches the hooks to a Keras module the moment the cell's import of it ends: a ``fit``
    right after ``import keras`` began before the watchdog's next look, and went unwatched (no
    steps counted, no fit noted for a search). Finds nothing itself: it wraps the spec the other finders
    find."""

    def __init__(self, attach: Callable[[str, ModuleType], None]) -> None:
        self._attach = attach

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname not in KERAS_MODULES:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader.exec_module = functools.partial(  # type: ignore[method-assign]
                    _exec_then_attach, spec.loader.exec_module, self._attach, fullname
                )
                return spec
        return None


def _exec_then_attach(
    exec_module: Callable[[ModuleType], None],
    attach: Callable[[str, ModuleType], None],
    name: str,
    module: ModuleType,
) -> None:
    exec_module(module)
    attach(name, module)


def _still_importing(module: ModuleType) -> bool:
    """A module whose import has begun but not ended (the cell is importing it right now)."""
    return bool(getattr(getattr(module, "__spec__", None), "_initializing", False))


def _with_heartbeat(
    init: Callable[..., None],
    callback_class: type,
    recorder: StepRecorder,
    watcher: FitWatcher | None = None,
    cell_thread: int | None = None,
    *,
    keras_2: bool = False,
) -> Callable[..., None]:
    """``CallbackList.__init__`` that also puts a heartbeat callback in the list, leaving what
    Keras makes of the person's callbacks as it is without the guard.

    Keras 2 decides at construction whether any callback wants the per-batch hooks, so there
    the heartbeat goes in through the ``callbacks`` argument, beside theirs: Keras flattens the
    two as it flattens theirs alone. Keras 3 also reads the argument's top level (whether each
    callback may be called on another thread): there it goes in after construction, told the
    model and the parameters as the others were. Only fits in ``cell_thread`` are told to the
    ``watcher``.
    """
    signature = inspect.signature(init)
    position = list(signature.parameters).index("callbacks")

    @functools.wraps(init)
    def with_heartbeat(*args: Any, **kwargs: Any) -> None:
        cells = watcher if threading.get_ident() == cell_thread else None
        heartbeat = callback_class(recorder, cells)
        if not keras_2:
            init(*args, **kwargs)
            _joined(args[0], heartbeat, signature.bind(*args, **kwargs).arguments)
        elif len(args) > position:
            init(
                *args[:position],
                _beside(args[position], heartbeat),
                *args[position + 1 :],
                **kwargs,
            )
        else:
            init(*args, **{**kwargs, "callbacks": _beside(kwargs.get("callbacks"), heartbeat)})

    return with_heartbeat


def _beside(callbacks: Any, heartbeat: Any) -> list[Any]:
    """The person's callbacks (none, one, or any nest of them) and the heartbeat, in a list that
    Keras 2 flattens into theirs and the heartbeat: the guard never iterates theirs."""
    return [heartbeat] if callbacks is None else [callbacks, heartbeat]


def _joined(callback_list: Any, heartbeat: Any, arguments: dict[str, Any]) -> None:
    """The heartbeat added to a Keras 3 ``CallbackList`` made of the person's callbacks, and
    told what its ``__init__`` told each of them (the model, the fit's parameters)."""
    callback_list.callbacks.append(heartbeat)
    model, params = arguments.get("model"), arguments.get("params")
    if model is not None:  # never the model's truth: its ``__bool__`` may be the person's
        heartbeat.set_model(model)
    if params:
        heartbeat.set_params(params)


@functools.cache
def heartbeat_callback_class(base: type) -> type:
    """A callback of the Keras whose ``Callback`` is ``base`` that reports steps and phases."""

    class HeartbeatCallback(base):  # type: ignore[misc]
        """Reports each batch's end to the guard's step recorder; never reads the logs."""

        async_safe = True  # Keras 3: keeps asynchronous dispatch on backends that have it
        _supports_tf_logs = True  # Keras 2: no conversion of the logs to NumPy for this callback

        def __init__(self, recorder: StepRecorder, watcher: FitWatcher | None = None) -> None:
            super().__init__()
            self._recorder = recorder
            self._watcher = watcher
            #: The steps of this fit the watcher has heard of: past :data:`STEPS_TOLD`, the
            #: per-step path costs the step recorder alone.
            self._steps_told = 0

        def on_train_begin(self, logs: Any = None) -> None:
            self._recorder.begin_phase(_PHASES["train"])
            if self._watcher is not None:
                steps = (self.params or {}).get("steps")
                epoch_steps = steps if isinstance(steps, int) else None
                model = _unsynced_model(self)
                self._watcher.fit_began(model, _fit_arguments(model), epoch_steps)

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            if self._watcher is not None:
                self._watcher.epoch_ended(_unsynced_model(self), epoch)

        def on_test_begin(self, logs: Any = None) -> None:
            self._recorder.begin_phase(_PHASES["test"])

        def on_predict_begin(self, logs: Any = None) -> None:
            self._recorder.begin_phase(_PHASES["predict"])

        def on_train_end(self, logs: Any = None) -> None:
            self._recorder.end_phase()
            if self._watcher is not None:
                self._watcher.fit_ended(_unsynced_model(self))

        def on_test_end(self, logs: Any = None) -> None:
            self._recorder.end_phase()

        on_predict_end = on_test_end

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            self._recorder.step()
            if self._steps_told < STEPS_TOLD and self._watcher is not None:
                self._steps_told += 1
                self._watcher.step_ended(_unsynced_model(self), self._steps_told)

        def on_test_batch_end(self, batch: int, logs: Any = None) -> None:
            self._recorder.step()

        on_predict_batch_end = on_test_batch_end

    return HeartbeatCallback


def _unsynced_model(callback: Any) -> Any:
    """The model a callback serves, without Keras 3's ``Callback.model`` property: on JAX that
    property writes the step's state back into the model's variables (``jax_state_sync``),
    which between two steps, on the thread an async-safe callback runs on, races the next step
    that donates those buffers ("Buffer has been deleted or donated"), and changes the person's
    run; and it looks up ``_jax_state``, which a model not yet synced lacks, through the
    person's ``__getattr__``. Keras 2 keeps the model as a plain attribute."""
    attributes = vars(callback)
    return attributes.get("_model", attributes.get("model"))


def _fit_arguments(model: Any) -> dict[str, Any]:
    """The parameters of the ``fit`` of ``model`` that is calling back, as that ``fit`` holds
    them now (after it split off ``validation_split``), read from its frame; empty if unseen."""
    frame: FrameType | None = sys._getframe(1)
    for _ in range(_FIT_FRAME_DEPTH):
        if frame is None:
            break
        code = frame.f_code
        if code.co_name == "fit" and frame.f_locals.get("self") is model:
            names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
            return {name: frame.f_locals.get(name) for name in names if name != "self"}
        frame = frame.f_back
    return {}
