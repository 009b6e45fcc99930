"""Give back the memory a failed cell pinned: outside the ``except``, after the traceback shows.

A traceback keeps every frame of the failed call alive, and with the frames their locals: the
batch, the activations, whatever tensors were in flight. So do ``sys.last_value`` (which
``%debug`` reads) and IPython's last execution result. Clearing them, then Keras' global state
and a garbage collection, returns that memory to the framework's allocator. ``%debug`` has
nothing left to inspect afterwards, which is why the guard does it by itself only after an
out-of-memory error (and the card says so).
"""

from __future__ import annotations

import gc
import inspect
import sys
from collections.abc import Callable, Mapping
from types import FrameType, ModuleType
from typing import Any

from ..diagnosis.report import exception_chain
from ..record import Reclaimed


def free_failure_memory(
    error: BaseException | None,
    read_allocator: Callable[[], int | None],
    baseline_bytes: int | None,
    modules: Mapping[str, ModuleType] | None = None,
    thorough: bool = True,
) -> Reclaimed:
    """Clear the frames of ``error``'s chain and the interpreter's last-error references to it,
    then collect.

    The shell's last execution result keeps the error itself, since the kernel reads it for the
    reply's ``error`` status; its frames are what held the memory, and they are cleared.

    Parameters
    ----------
    read_allocator
        Reads the framework allocator's current bytes (summed over the watched devices).
    baseline_bytes
        The allocator's current bytes before the cell ran: what "fully reclaimed" means.
    thorough
        After a failure of the person's code: Keras' session cleared too, and a full collection.
        After one of the guard's own measurements, whose tensors the cleared frames alone held:
        neither (a cleared session costs the next measurement a trace of its step, a full
        collection with a framework loaded 0.2 s), a collection of the young generations only,
        where the failure's own cycles are.
    """
    before = read_allocator()
    cleared = 0
    if error is not None:
        cleared = clear_chain_frames(error)
        _drop_last_exception(error)
    loaded = sys.modules if modules is None else modules
    if thorough:
        clear_keras_session(loaded)
    gc.collect(2 if thorough else 1)
    release_cached_blocks(loaded)
    return Reclaimed(baseline_bytes, before, read_allocator(), cleared)


def clear_chain_frames(error: BaseException) -> int:
    """Clear the local variables of every finished frame in the whole chain's tracebacks."""
    cleared = 0
    for link in exception_chain(error, suppressed_too=True):
        tb = link.__traceback__
        while tb is not None:
            cleared += _clear_frame(tb.tb_frame)
            tb = tb.tb_next
    return cleared


def _clear_frame(frame: FrameType) -> int:
    """Clear a frame's locals, and the snapshot of them a traceback formatter may have taken.

    Python up to 3.12 keeps a function's ``frame.f_locals`` as a dict cached on the frame,
    which ``frame.clear()`` leaves alone: that snapshot belongs to the frame and is emptied.
    Any other frame's ``f_locals`` is the namespace it ran in (a cell's, a class body's, the
    ``locals`` given to ``exec``): the person's own mapping, never touched.
    """
    try:
        snapshot = frame.f_locals
        if type(snapshot) is dict and frame.f_code.co_flags & inspect.CO_OPTIMIZED:
            snapshot.clear()
        frame.clear()
    except RuntimeError:  # still executing: one of the guard's own callers
        return 0
    return 1


class _DroppedSeedGenerators:
    """How many times the guard's clear of Keras' session dropped Keras' global seed generator
    in this process: the variable an unseeded random op makes while a step is traced, which a
    step function traced before the clear cannot make again on a retrace (see
    :meth:`~ipy_gpuguard.retry.measure.Measurer._traceable`)."""

    count = 0


def dropped_seed_generators() -> int:
    """How many times the guard's clear of Keras' session dropped its global seed generator."""
    return _DroppedSeedGenerators.count


def clear_keras_session(modules: Mapping[str, ModuleType]) -> None:
    """``keras.backend.clear_session()``, keeping the dtype policy (mixed precision) it resets.

    Only when Keras is already imported: importing it here would cost seconds.
    """
    keras = modules.get("keras")
    backend = getattr(keras, "backend", None)
    if backend is None or not hasattr(backend, "clear_session"):
        return
    if _holds_global_seed_generator():
        _DroppedSeedGenerators.count += 1
    config: Any = getattr(keras, "config", None)
    keeps_policy = hasattr(config, "dtype_policy") and hasattr(config, "set_dtype_policy")
    policy = config.dtype_policy() if keeps_policy else None
    try:
        backend.clear_session(free_memory=False)  # the caller collects once, afterwards
    except TypeError:  # Keras 2 has no free_memory argument
        backend.clear_session()
    if keeps_policy:
        config.set_dtype_policy(policy)


def _holds_global_seed_generator() -> bool:
    """Whether Keras' session holds its global seed generator (where this Keras does not say,
    as if it did: a step function made anew costs a trace, one that cannot retrace fails)."""
    try:
        from keras.src.backend.common import global_state
        from keras.src.random.seed_generator import GLOBAL_SEED_GENERATOR
    except ImportError:
        return True
    return global_state.get_global_attribute(GLOBAL_SEED_GENERATOR) is not None


def release_cached_blocks(modules: Mapping[str, ModuleType]) -> None:
    """Give PyTorch's cached free blocks back to the driver, so that NVML and other processes
    see the memory again (its allocator keeps them for reuse otherwise). JAX's and TensorFlow's
    pools are theirs until the process ends: a restart is what frees them, as the card says."""
    torch: Any = modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and cuda.is_initialized():
        cuda.empty_cache()


def _drop_last_exception(error: BaseException) -> None:
    """``sys.last_value`` and friends, which IPython sets for ``%debug``, when they hold
    ``error``: a later failure is the person's to debug."""
    if getattr(sys, "last_value", None) is not error:
        return
    for name in ("last_type", "last_value", "last_traceback", "last_exc"):
        if hasattr(sys, name):
            setattr(sys, name, None)
