"""The watchdog's stall in a terminal: one line on stderr when it is found.

A terminal has no live panel nor card while the cell runs; without this line a ``fit`` waiting
on a stuck generator sat ten minutes with nothing printed. Each stall is said once, from the
watchdog's thread, when it is found; the card after the cell says the rest.
"""

from __future__ import annotations

import sys

from ..cards.stall import stop_not_landed, terminal_not_landed_line, terminal_stall_line
from ..record import PanelView


class TerminalStallLines:
    """The stall lines of one guarded cell."""

    def __init__(self) -> None:
        self._said: float | None = None  # when the stall said last began
        self._stop_said: float | None = None  # the Stop said not to have landed

    def changed(self, view: PanelView) -> None:
        """From the watchdog's thread: say a stall that was just found, and a Ctrl-C that
        did not land in it."""
        watch = view.watch
        stall = watch.stall if watch is not None else None
        if watch is None or stall is None:
            return
        if stall.started_at != self._said:
            self._said = stall.started_at
            print(terminal_stall_line(watch), file=sys.stderr, flush=True)
        if stop_not_landed(watch) is not None and watch.stop_sent_at != self._stop_said:
            self._stop_said = watch.stop_sent_at
            print(terminal_not_landed_line(watch), file=sys.stderr, flush=True)
