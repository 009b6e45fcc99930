"""The framework's native log of one cell, read as it is written and passed on untouched.

TensorFlow's C++ code writes to file descriptor 2 directly, not to ``sys.stderr``, and its
lines carry what the Python exception leaves out (the allocator's "ran out of memory trying to
allocate", the cuDNN versions loaded). For the length of a guarded cell, descriptor 2 becomes a
pipe; a thread copies every byte on to the original descriptor (the terminal, or the kernel's
own capture that shows it in the notebook) and keeps the last lines for the diagnosis.

A child process started during the cell (TensorBoard, a data server) inherits the pipe as its
stderr. When the cell ends and a child still holds the pipe, the pipe is handed to the session's
:class:`PipeDrain`, which goes on copying it until the last child closes it, so that no child
dies of SIGPIPE. POSIX only: on Windows, ``select`` does not work on pipes, and the diagnosis
reads the exception alone.
"""

from __future__ import annotations

import collections
import contextlib
import os
import select
import sys
import threading

_STDERR = 2
_POLL_S = 0.05
_KEEP_LINES = 400
_MAX_LINE = 4000


class PipeDrain:
    """Copies the pipes that children still hold after their cell, each until its last writer
    closes it; a thread runs only while there is such a pipe, and :meth:`close` ends it."""

    def __init__(self) -> None:
        self._pipes: dict[int, int] = {}  # read end -> where its bytes go (a descriptor it owns)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def adopt(self, read_end: int, destination: int) -> None:
        """Take over ``read_end`` (and ``destination``, a descriptor of its own to close)."""
        with self._lock:
            self._pipes[read_end] = destination
            if self._thread is None:
                self._stop.clear()
                self._thread = threading.Thread(
                    target=self._copy, name="ipy_gpuguard-native-log-drain", daemon=True
                )
                self._thread.start()

    @property
    def pipes(self) -> int:
        return len(self._pipes)

    def close(self) -> None:
        """Stop copying (unloading the extension): the children's pipes are closed."""
        thread = self._thread
        self._stop.set()
        if thread is not None:
            thread.join()

    def _copy(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                if not self._pipes:
                    self._thread = None
                    return
                pipes = list(self._pipes)
            ready, _, _ = select.select(pipes, [], [], _POLL_S)
            for read_end in ready:
                data = b""
                with contextlib.suppress(OSError):
                    data = os.read(read_end, 65536)
                if data:
                    with contextlib.suppress(OSError):
                        os.write(self._pipes[read_end], data)
                else:
                    self._release(read_end)
        with self._lock:
            for read_end in list(self._pipes):
                self._release(read_end)
            self._thread = None

    def _release(self, read_end: int) -> None:
        destination = self._pipes.pop(read_end)
        os.close(read_end)
        os.close(destination)


class NativeLogTee:
    """Copies descriptor 2 through a pipe while started, keeping its last lines.

    Parameters
    ----------
    drain
        Takes the pipe over when the cell ends while a child process still holds it.
    """

    def __init__(self, drain: PipeDrain | None = None) -> None:
        self._drain = drain
        self._lines: collections.deque[str] = collections.deque(maxlen=_KEEP_LINES)
        self._partial = b""
        self._saved: int | None = None
        self._read_end: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @staticmethod
    def supported() -> bool:
        return os.name == "posix"

    def start(self) -> None:
        """Put the pipe in place of descriptor 2; nothing changes where that is not supported."""
        if not self.supported() or self._thread is not None:
            return
        _flush_python_streams()
        read_end, write_end = os.pipe()
        self._saved = os.dup(_STDERR)
        os.dup2(write_end, _STDERR)
        os.close(write_end)
        self._read_end = read_end
        self._thread = threading.Thread(
            target=self._copy, name="ipy_gpuguard-native-log", daemon=True
        )
        self._thread.start()

    def stop(self) -> tuple[str, ...]:
        """Put descriptor 2 back, copy what is left, and return the lines kept."""
        if self._thread is None or self._saved is None:
            return tuple(self._lines)
        _flush_python_streams()
        os.dup2(self._saved, _STDERR)  # closes the pipe's last writer in this process
        self._stop.set()
        self._thread.join()
        self._thread = None
        os.close(self._saved)
        self._saved = None
        if self._partial:
            self._keep(self._partial)
            self._partial = b""
        return tuple(self._lines)

    def _copy(self) -> None:
        assert self._read_end is not None
        assert self._saved is not None
        read_end, saved = self._read_end, self._saved
        handed_over = False
        try:
            while True:
                # Read before the wait: stop() closes this process's writer before it says
                # stop, so once stopping, an end of file is already there to be seen at once.
                # (Deciding after a wait that ran out handed a pipe at its end of file over.)
                stopping = self._stop.is_set()
                ready, _, _ = select.select([read_end], [], [], 0 if stopping else _POLL_S)
                if not ready:
                    if stopping:
                        # Nothing to read and no end of file: a child still holds the pipe.
                        handed_over = self._hand_over(read_end, saved)
                        break
                    continue
                data = os.read(read_end, 65536)
                if not data:
                    break
                os.write(saved, data)
                self._split(data)
        except OSError:
            pass  # descriptor 2 is gone (the process is ending): nothing left to copy
        finally:
            if not handed_over:
                os.close(read_end)
            self._read_end = None

    def _hand_over(self, read_end: int, saved: int) -> bool:
        if self._drain is None:
            return False
        self._drain.adopt(read_end, os.dup(saved))
        return True

    def _split(self, data: bytes) -> None:
        """Keep the complete lines; a line without an end yet (a progress bar rewritten with
        ``\r``) is kept to its first ``_MAX_LINE`` bytes, so that copying stays linear."""
        *complete, tail = data.split(b"\n")
        if complete:
            self._keep(self._partial + complete[0][:_MAX_LINE])
            for line in complete[1:]:
                self._keep(line)
            self._partial = tail[:_MAX_LINE]
        elif len(self._partial) < _MAX_LINE:
            self._partial = (self._partial + tail)[:_MAX_LINE]

    def _keep(self, line: bytes) -> None:
        self._lines.append(line[:_MAX_LINE].decode("utf-8", "replace").rstrip("\r"))


def _flush_python_streams() -> None:
    """Python's own buffered output goes out before the descriptor changes, in order."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed or odd stream has nothing to flush
            stream.flush()
