"""How the watchdog interrupts a stuck cell, and how that interrupt is told from the person's.

SIGINT (the stop button) is delivered to the main thread only, and runs only when Python code
runs there. While Keras trains on a Python generator, the main thread waits in native code for a
``tf.data`` thread that runs the generator: the stop button then lands only when data arrives.
Raising in the thread that is stuck does land: ``PyThreadState_SetAsyncExc`` makes that thread
raise at its next Python instruction, and TensorFlow then ends the ``fit`` with an error that
wraps it. No thread waiting inside one native call (a long ``sleep``, a lock without timeout, a
GPU wait) can be interrupted from inside the process; the watchdog then says so.
"""

from __future__ import annotations

import ctypes
import signal
import sys
import threading

_set_async_exc = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.py_object)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi)
)


class WatchdogInterrupt(KeyboardInterrupt):
    """Raised by the watchdog in a cell that made no progress for too long.

    A ``KeyboardInterrupt``, so that code which cleans up after an interrupt does so here too;
    its own name, so that TensorFlow's error text (which names it) tells it from the person's.
    """


def raise_in_thread(ident: int) -> bool:
    """Make thread ``ident`` raise :class:`WatchdogInterrupt` at its next Python instruction."""
    modified: int = _set_async_exc(ident, WatchdogInterrupt)
    return modified == 1


def withdraw(ident: int) -> None:
    """Cancel an interrupt that has not landed yet, so it cannot fire after the cell."""
    _set_async_exc(ident, ctypes.py_object())


def signal_main_thread() -> bool:
    """Send SIGINT to the main thread, as the stop button does: it also ends a blocking system
    call there (``sleep``, ``queue.get``). Not on Windows, which has no thread signals."""
    if sys.platform == "win32":
        return False
    ident = threading.main_thread().ident
    if ident is None:
        return False
    signal.pthread_kill(ident, signal.SIGINT)
    return True
