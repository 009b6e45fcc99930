"""The live memory panel: stock ipywidgets, drawn from the sampler thread.

Trait changes made from a thread reach the frontend as ``comm_msg`` while the cell runs, but a
``print`` or ``display`` from a thread does not belong to the cell, so the sampler only ever sets
traits of widgets created here on the main thread. Each redraw of a widget is one message
(``hold_sync``), and redraws are at most four a second whatever the sampling interval.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from html import escape
from typing import Any

import ipywidgets as widgets

from ..protocol import LIVE_PANEL_METADATA, LivePanel, to_json
from ..record import PanelView, bar_style, device_fraction, device_series
from ..telemetry import DeviceInfo
from . import render, watch_render
from .owned import OwnedWidgets

#: The least time between two redraws (seconds): four a second at most.
MIN_REDRAW_INTERVAL_S = 0.25


class _DeviceRow:
    """One GPU: a label, a memory bar, a line of figures and the chart."""

    def __init__(self, info: DeviceInfo, owned: OwnedWidgets) -> None:
        self.info = info
        self.label = owned.make(widgets.HTML)
        # As wide as the panel: a width of 100% plus the widget's margin overflowed it, and
        # every live panel had a horizontal scrollbar.
        layout = owned.make(widgets.Layout, width="auto")
        self.bar = owned.make(widgets.FloatProgress, min=0.0, max=1.0, layout=layout)
        self.stats = owned.make(widgets.HTML)
        self.chart = owned.make(widgets.HTML)
        self.box = owned.make(widgets.VBox, [self.label, self.bar, self.stats, self.chart])

    def draw(self, view: PanelView) -> None:
        sample = view.latest_of(self.info.index)
        fraction = device_fraction(self.info, sample)
        with self.bar.hold_sync():
            self.bar.value = fraction or 0.0
            self.bar.bar_style = bar_style(fraction)
        self.label.value = f"<b>{escape(render.device_label_text(self.info, sample))}</b>"
        self.stats.value = escape(render.device_stats_text(sample, self.info.simulated))
        self.chart.value = render.memory_chart_svg(device_series(view, self.info))


class MemoryPanel:
    """The panel shown above a guarded cell's output while it runs."""

    def __init__(
        self, devices: tuple[DeviceInfo, ...], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._clock = clock
        self._last_redraw: float | None = None
        self.redraws = 0
        self._lock = threading.Lock()  # the sampler and the watchdog both redraw
        self._owned = OwnedWidgets()
        with self._owned.closed_on_failure() as owned:
            self._title = owned.make(widgets.HTML)
            self._progress = owned.make(widgets.HTML)
            self._notes = owned.make(widgets.HTML)
            self._warning = owned.make(widgets.HTML)
            hidden = owned.make(widgets.Layout, display="none")
            self.hang_card = owned.make(widgets.HTML, layout=hidden)
            self._rows = [_DeviceRow(info, owned) for info in devices]
            self.widget = owned.make(
                widgets.VBox,
                [
                    self._title,
                    self._progress,
                    *(row.box for row in self._rows),
                    self._notes,
                    self._warning,
                    self.hang_card,
                ],
            )

    def draw(self, view: Callable[[], PanelView], force: bool = False) -> bool:
        """Redraw unless the last redraw was under a quarter of a second ago.

        ``view`` builds what to show; it is called only when a redraw is due, so a fast sampling
        interval costs no rendering work beyond four redraws a second.
        """
        with self._lock:
            now = self._clock()
            last = self._last_redraw
            if not force and last is not None and now - last < MIN_REDRAW_INTERVAL_S:
                return False
            self._last_redraw = now
            self._render(view())
            return True

    def _render(self, view: PanelView) -> None:
        self._title.value = f"<b>{escape(render.title_text(view))}</b>"
        watch = view.watch
        progress = watch_render.progress_text(watch.progress) if watch else None
        self._progress.value = escape(progress or "")
        for row in self._rows:
            row.draw(view)
        self._notes.value = render.notes_html(view)
        warning = watch.step_warning if watch else None
        self._warning.value = watch_render.timeout_warning_html(warning) if warning else ""
        card = watch_render.hang_card_html(view)
        with self.hang_card.hold_sync():
            self.hang_card.value = card
            self.hang_card.layout.display = "block" if card else "none"
        stalled = watch is not None and watch.stall is not None
        self.widget.layout.border = "2px solid #f0ad4e" if stalled else ""
        self.redraws += 1

    def close(self) -> None:
        """Close every widget, so that nothing of this cell stays alive in the kernel."""
        self._owned.close()

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        """The widget's view, marked live: a frontend that sees the kernel die shows the
        mark's words instead (the summary that replaces the panel when the cell ends has no
        mark)."""
        mark = to_json(LivePanel(render.STOPPED_BY_DEATH_TEXT, render.STOPPED_BY_RESTART_TEXT))
        return self.widget._repr_mimebundle_(**kwargs), {LIVE_PANEL_METADATA: mark}
