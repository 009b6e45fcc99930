"""Ctrl-C while the guard starts or finishes a cell: never half a guard, never a traceback.

The guard's own start and finish take milliseconds, but a person who presses the stop button
just then sent SIGINT into them. Python would raise ``KeyboardInterrupt`` wherever the guard
was, IPython would print "Error in callback" with the guard's internals, and the cell would
run unguarded (at the start) or keep a live panel (at the finish). Instead, the interrupt is
held until the step is done: at the start the cell is then stopped before it runs, at the
finish it is said in one line.
"""

from __future__ import annotations

import ast
import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

from IPython.core.error import InputRejected


class Interrupted:
    """Whether an interrupt arrived while it was held."""

    def __init__(self) -> None:
        self.received = False


@contextlib.contextmanager
def held_interrupt() -> Iterator[Interrupted]:
    """Hold SIGINT for the block (on the main thread; elsewhere, or where signals are not
    ours to handle, the block runs as it is)."""
    with _sigint_noted(passed_on=False) as interrupted:
        yield interrupted


@contextlib.contextmanager
def noted_interrupts() -> Iterator[Interrupted]:
    """Note each SIGINT that arrives in the block, then let it act as it would have
    (``KeyboardInterrupt``), even inside :func:`held_interrupt`: the person's runs and the
    guard's measurements, inside the guard's held steps, stop at the person's Stop. One raised where Python cannot raise it (in a finaliser: "Exception
    ignored") is still noted, so a retry's attempts stop at the person's Stop wherever it lands.
    """
    with _sigint_noted(passed_on=True) as interrupted:
        yield interrupted


#: The noting handler of each hold in force, and the handler it replaced: what an interrupt
#: let through a hold (:func:`noted_interrupts` inside :func:`held_interrupt`) is handed to.
_HELD_OVER: dict[Any, Any] = {}


@contextlib.contextmanager
def _sigint_noted(passed_on: bool) -> Iterator[Interrupted]:
    """SIGINT's handler for the block notes each one, and with ``passed_on`` hands it to the
    handler it replaced (through any hold, to the handler the outermost hold replaced); on the
    main thread only (signals are not ours elsewhere)."""
    interrupted = Interrupted()
    if threading.current_thread() is not threading.main_thread():
        yield interrupted
        return

    def note(signum: int, frame: Any) -> None:
        interrupted.received = True
        if not passed_on:
            if previous in _HELD_OVER and callable(previous):
                previous(signum, frame)  # a hold inside a hold: the outer one hears it too
            return
        handler = previous
        while handler in _HELD_OVER:
            handler = _HELD_OVER[handler]
        if callable(handler):
            handler(signum, frame)
        elif handler == signal.SIG_DFL:
            signal.default_int_handler(signum, frame)

    try:
        previous = signal.signal(signal.SIGINT, note)
    except ValueError:  # not the main interpreter
        yield interrupted
        return
    if not passed_on:
        _HELD_OVER[note] = previous
    try:
        yield interrupted
    finally:
        signal.signal(signal.SIGINT, previous)
        _HELD_OVER.pop(note, None)


class CellStopped(InputRejected):
    """The cell was stopped before it ran; IPython shows this line instead of a traceback."""

    def _render_traceback_(self) -> list[str]:
        return [f"KeyboardInterrupt: {self}"]


class StopCell(ast.NodeTransformer):
    """An AST transformer that refuses the next cell once :meth:`stop` is called: the only
    way to stop a cell from ``pre_run_cell``, which IPython calls before it compiles it."""

    def __init__(self) -> None:
        self._reason: str | None = None

    def stop(self, reason: str) -> None:
        self._reason = reason

    def visit_Module(self, node: ast.Module) -> ast.Module:  # ast's visitor name
        reason, self._reason = self._reason, None
        if reason is not None:
            raise CellStopped(reason)
        return node
