"""The watchdog's stall as a card while the cell still runs, for a frontend that renders cards.

A widget's button cannot be clicked while a cell runs (its click waits behind the cell on the
shell channel), but the lab extension's **Interrupt** goes through the server: so the stall is
shown as card data, from the watchdog's thread, in the running cell's output (ipykernel sends
a thread's output to the cell that runs). One card per stall, updated while it goes on.
"""

from __future__ import annotations

import uuid

from ..cards import hang_card
from ..record import PanelView
from ..ui.card import StaticCard
from .cell_display import CellDisplay, page_publisher


class LiveHangCards:
    """The cards of one guarded cell's stalls (made as the cell begins: see :mod:`.cell_display`)."""

    def __init__(self, cell_id: str | None, execution_count: int | None) -> None:
        self._cell_id = cell_id
        self._execution_count = execution_count
        self._publisher = page_publisher()
        self._display: CellDisplay | None = None
        self._card_id = ""
        self._stall_started: float | None = None

    def changed(self, view: PanelView) -> None:
        """From the watchdog's thread: show a new stall, or the one going on as it now is; once
        it ended (progress came back, or the cell ended), its card says what became of it."""
        watch = view.watch
        if watch is None:
            return
        stall = watch.stall
        if stall is None:  # the one shown, if it ended
            stall = next(
                (s for s in watch.past_stalls if s.started_at == self._stall_started), None
            )
            if stall is None or self._display is None:
                return
        elif stall.started_at != self._stall_started:
            self._stall_started = stall.started_at
            self._card_id = uuid.uuid4().hex
            self._display = CellDisplay(self._card_id, self._publisher)
        assert self._display is not None
        card = hang_card(view, stall, self._card_id, self._cell_id, self._execution_count)
        self._display.show(StaticCard(card))
