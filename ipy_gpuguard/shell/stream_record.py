"""A copy of what a retry's attempt prints, kept for the card, while it still goes where it goes.

Under the card's buttons an attempt prints into an ``Output`` widget, which the frontend fills:
the kernel never holds it, and it is gone with the widget's model (a restart, a reload of the
saved notebook, nbconvert). The card keeps a copy of the streams instead. The copy is taken at
ipykernel's ``OutStream`` through its ``echo``, the stream it also writes everything to (the
terminal, where the kernel echoes): ``sys.stdout`` stays the object the person's code knows,
and every write reaches it and the frontend unchanged. Native output that ipykernel forwards
from the process's file descriptors passes through the same ``write``.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..ui.output_render import fold_stream, stream_outputs

#: Text of one stream kept before it is folded: a progress bar rewrites its line thousands of
#: times, and only the last of them shows.
_FOLD_AT_CHARS = 1 << 16


class StreamRecord:
    """The chunks written to the streams, in order, neighbours of one stream joined."""

    def __init__(self) -> None:
        self._chunks: list[list[str]] = []
        self._lock = threading.Lock()  # the person's threads print too

    def add(self, name: str, text: str) -> None:
        with self._lock:
            if self._chunks and self._chunks[-1][0] == name:
                last = self._chunks[-1]
                last[1] += text
                if len(last[1]) > _FOLD_AT_CHARS:
                    last[1] = fold_stream(last[1])
            else:
                self._chunks.append([name, text])

    def outputs(self) -> tuple[dict[str, str], ...]:
        with self._lock:
            return stream_outputs((name, text) for name, text in self._chunks)


class _Echo:
    """The stream's echo while an attempt runs: the echo it had, and the record."""

    def __init__(self, name: str, previous: Any, record: StreamRecord) -> None:
        self._name = name
        self._previous = previous
        self._record = record

    def write(self, text: str) -> int:
        self._record.add(self._name, text)
        return self._previous.write(text) if self._previous is not None else len(text)

    def flush(self) -> None:
        if self._previous is not None:
            self._previous.flush()


@contextmanager
def recorded_streams() -> Iterator[StreamRecord]:
    """Record what ``sys.stdout`` and ``sys.stderr`` print inside the block, where they are
    ipykernel's streams (elsewhere, a terminal's, nothing is lost to keep)."""
    record = StreamRecord()
    echoed = []
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if hasattr(stream, "echo") and hasattr(stream, "pub_thread"):  # ipykernel's OutStream
            echoed.append((stream, stream.echo))
            stream.echo = _Echo(name, stream.echo, record)
    try:
        yield record
    finally:
        for stream, previous in echoed:
            stream.echo = previous
