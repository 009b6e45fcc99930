"""Hears the person's Stop (SIGINT) the moment it arrives, even where it cannot land.

Python runs a signal's handler on the main thread between two bytecodes: a main thread inside
one native call (waiting in the framework for a generator stuck on another thread) never runs
it, and the stop button then changes nothing anyone can see. The C-level handler still writes
the signal's number to the wakeup file descriptor (``signal.set_wakeup_fd``) at once: the
watchdog reads it there, and the stall's card says that the interrupt came and did not land.
The descriptor is the guard's only where nobody else has set one; it changes nothing of how the
signal itself acts.
"""

from __future__ import annotations

import signal
import socket
import threading
import time
from collections.abc import Callable


class StopHeard:
    """When the last SIGINT came, read from a wakeup descriptor of the guarded cell's own."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock
        self._heard_at: float | None = None
        self._read: socket.socket | None = None
        self._write: socket.socket | None = None

    def listen(self) -> bool:
        """Set the wakeup descriptor (on the main thread, where none is set); whether it is."""
        if threading.current_thread() is not threading.main_thread():
            return False
        read, write = socket.socketpair()
        read.setblocking(False)
        write.setblocking(False)
        try:
            earlier = signal.set_wakeup_fd(write.fileno(), warn_on_full_buffer=False)
        except (ValueError, OSError):
            read.close()
            write.close()
            return False
        if earlier != -1:  # someone else's (an event loop's): theirs stays
            signal.set_wakeup_fd(earlier)
            read.close()
            write.close()
            return False
        self._read, self._write = read, write
        return True

    def heard_at(self) -> float | None:
        """The clock time of the last SIGINT heard; from any thread."""
        read = self._read
        if read is not None:
            try:
                arrived = read.recv(256)
            except (BlockingIOError, OSError):
                arrived = b""
            if signal.SIGINT in arrived:
                self._heard_at = self._clock()
        return self._heard_at

    def close(self) -> None:
        """Give the wakeup descriptor back (on the main thread, as it was set)."""
        if self._write is None or threading.current_thread() is not threading.main_thread():
            return  # never closed while still the wakeup descriptor
        current = signal.set_wakeup_fd(-1)
        if current != self._write.fileno():  # set again by someone since: theirs stays
            signal.set_wakeup_fd(current)
        for end in (self._read, self._write):
            if end is not None:
                end.close()
        self._read = self._write = None
