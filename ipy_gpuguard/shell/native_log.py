"""The framework's native log of one cell, read as it is written and passed on untouched.

TensorFlow's C++ code writes to file descriptor 2 directly, not to ``sys.stderr``, and its
lines carry what the Python exception leaves out (the allocator's "ran out of memory trying to
allocate", the cuDNN versions loaded). For the length of a guarded cell, descriptor 2 becomes a
pipe; a thread copies every byte on to the original descriptor (the terminal, or the kernel's
own capture that shows it in the notebook) and keeps the last lines for the diagnosis.

POSIX only: on Windows, ``select`` does not work on pipes, and the diagnosis reads the
exception alone.
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


class NativeLogTee:
    """Copies descriptor 2 through a pipe while started, keeping its last lines."""

    def __init__(self) -> None:
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
        try:
            while True:
                ready, _, _ = select.select([read_end], [], [], _POLL_S)
                if not ready:
                    if self._stop.is_set():
                        break  # a child process may still hold the pipe: do not wait for it
                    continue
                data = os.read(read_end, 65536)
                if not data:
                    break
                os.write(saved, data)
                self._split(data)
        except OSError:
            pass  # descriptor 2 is gone (the process is ending): nothing left to copy
        finally:
            os.close(read_end)
            self._read_end = None

    def _split(self, data: bytes) -> None:
        *complete, self._partial = (self._partial + data).split(b"\n")
        for line in complete:
            self._keep(line)

    def _keep(self, line: bytes) -> None:
        self._lines.append(line[:_MAX_LINE].decode("utf-8", "replace").rstrip("\r"))


def _flush_python_streams() -> None:
    """Python's own buffered output goes out before the descriptor changes, in order."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed or odd stream has nothing to flush
            stream.flush()
