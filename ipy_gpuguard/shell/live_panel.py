"""The live memory panel while a guarded cell runs: one display, redrawn in place from the
sampler's and the watchdog's threads.

Each redraw replaces the display by its id (``update_display_data``): every frontend routes
such an update by the display id, whichever thread sent it and whatever cell is running
(JupyterLab, Notebook 7, VS Code, Colab). Redraws are at most four a second whatever the
sampling interval, each one message; the panel's end puts the summary in its place.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable

from ..record import PanelView
from ..ui.panel import LiveDrawing
from .cell_display import CellDisplay, page_publisher

#: The least time between two redraws (seconds): four a second at most.
MIN_REDRAW_INTERVAL_S = 0.25


class MemoryPanel:
    """The panel shown above a guarded cell's output while it runs.

    ``show`` displays the first drawing; ``draw`` replaces it (from the sampler's and the
    watchdog's threads); ``end`` replaces it with what stays (the summary), after which no
    drawing comes: a redraw racing the end never covers the summary.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._last_redraw: float | None = None
        self._publisher = page_publisher()  # made as the cell begins: see .cell_display
        self._display: CellDisplay | None = None
        self._ended = False
        self.redraws = 0
        self._lock = threading.Lock()  # the sampler and the watchdog both redraw

    def show(self, view: PanelView) -> None:
        with self._lock:
            self._display = CellDisplay(uuid.uuid4().hex, self._publisher)
            self._display.show(LiveDrawing(view))
            self._last_redraw = self._clock()
            self.redraws += 1

    def draw(self, view: Callable[[], PanelView], force: bool = False) -> bool:
        """Redraw unless the last redraw was under a quarter of a second ago.

        ``view`` builds what to show; it is called only when a redraw is due, so a fast sampling
        interval costs no rendering work beyond four redraws a second.
        """
        with self._lock:
            if self._display is None or self._ended:
                return False
            now = self._clock()
            last = self._last_redraw
            if not force and last is not None and now - last < MIN_REDRAW_INTERVAL_S:
                return False
            self._last_redraw = now
            self._display.show(LiveDrawing(view()))
            self.redraws += 1
            return True

    def end(self, lasting: object | None = None) -> bool:
        """No drawing after this one: ``lasting`` takes the panel's place, or nothing does (a
        cell that never started). Returns whether the panel had been shown."""
        with self._lock:
            if self._display is not None and not self._ended:
                if lasting is None:
                    self._display.show_raw({"text/plain": ""})
                else:
                    self._display.show(lasting)
            self._ended = True
            return self._display is not None
