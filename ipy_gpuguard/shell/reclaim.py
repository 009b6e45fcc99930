"""Give back the memory a failed cell pinned: outside the ``except``, after the traceback shows.

A traceback keeps every frame of the failed call alive, and with the frames their locals: the
batch, the activations, whatever tensors were in flight. So do ``sys.last_value`` (which
``%debug`` reads) and IPython's last execution result. Clearing them, then Keras' global state
and a garbage collection, returns that memory to the framework's allocator. ``%debug`` has
nothing left to inspect afterwards, which is why the guard does it by itself only after an
out-of-memory error (and the card says so).
"""

from __future__ import annotations

import contextlib
import gc
import inspect
import sys
from collections.abc import Callable, Iterator, Mapping
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


def clear_keras_session(modules: Mapping[str, ModuleType]) -> None:
    """``keras.backend.clear_session()``, keeping the dtype policy (mixed precision) it resets
    and the random state the person's step functions were traced with.

    Only when Keras is already imported: importing it here would cost seconds.
    """
    keras = modules.get("keras")
    backend = getattr(keras, "backend", None)
    if backend is None or not hasattr(backend, "clear_session"):
        return
    config: Any = getattr(keras, "config", None)
    keeps_policy = hasattr(config, "dtype_policy") and hasattr(config, "set_dtype_policy")
    policy = config.dtype_policy() if keeps_policy else None
    with _random_state_kept():
        try:
            backend.clear_session(free_memory=False)  # the caller collects once, afterwards
        except TypeError:  # Keras 2 has no free_memory argument
            backend.clear_session()
    if keeps_policy:
        config.set_dtype_policy(policy)


@contextlib.contextmanager
def _random_state_kept() -> Iterator[None]:
    """Keep Keras 3's global seed generator and random seed across the clear. An unseeded
    random op (``keras.random.uniform(..., seed=None)``) makes that generator, a variable,
    while a step is traced; dropped, a retrace of a step function traced before would make it
    again, and ``tf.function`` makes variables on its first trace only: the person's next
    ``fit`` at another size, or the guard's retry of it, failed with "Creating variables on a
    non-first call to a function decorated with tf.function". Two numbers of state: nothing
    a clear frees memory by dropping."""
    try:
        from keras.src.backend.common import global_state
        from keras.src.random.seed_generator import GLOBAL_SEED_GENERATOR
        from keras.src.utils.rng_utils import GLOBAL_RANDOM_SEED
    except ImportError:  # Keras 2: its unseeded ops make no variable
        yield
        return
    names = (GLOBAL_SEED_GENERATOR, GLOBAL_RANDOM_SEED)
    kept = {name: global_state.get_global_attribute(name) for name in names}
    try:
        yield
    finally:
        for name, value in kept.items():
            if value is not None:
                global_state.set_global_attribute(name, value)


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
