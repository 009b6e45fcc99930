"""The live memory panel's drawings: HTML, pure functions of a :class:`PanelView`.

A drawing is a whole display (the shell replaces the last one by its display id): what a
notebook saves of a live panel is its last drawing, which a reload, a restart or nbconvert
still shows. A panel of widgets was saved as views of models that lived in the kernel: after a
restart and a reload it became "Error displaying widget: model not found".
"""

from __future__ import annotations

from html import escape
from typing import Any

from ..protocol import LIVE_PANEL_METADATA, LivePanel, to_json
from ..record import PanelView, bar_style, device_fraction, device_series
from ..telemetry import DeviceInfo
from . import render, watch_render

#: A memory bar's colour by its style: plain, near capacity, at capacity.
_BAR_COLOURS = {"": "#1976d2", "warning": "#f0ad4e", "danger": "#d9534f"}
_STALLED_BORDER = "2px solid #f0ad4e"


def panel_html(view: PanelView) -> str:
    """One drawing of the live panel: title, progress, a row per GPU (label, memory bar,
    figures, chart), notes, the step-time warning and, where no frontend shows a hang card,
    the stall."""
    watch = view.watch
    progress = watch_render.progress_text(watch.progress) if watch else None
    warning = watch.step_warning if watch else None
    stalled = watch is not None and watch.stall is not None
    rows = "".join(_device_html(view, info) for info in view.devices)
    border = f"border:{_STALLED_BORDER};padding:4px;" if stalled else ""
    return (
        f'<div class="ipy-gpuguard-panel" style="font-size:12px;{border}">'
        f"<div><b>{escape(render.title_text(view))}</b></div>"
        f"{f'<div>{escape(progress)}</div>' if progress else ''}"
        f"{rows}{render.notes_html(view)}"
        f"{watch_render.timeout_warning_html(warning) if warning else ''}"
        f"{watch_render.hang_card_html(view)}</div>"
    )


def _device_html(view: PanelView, info: DeviceInfo) -> str:
    sample = view.latest_of(info.index)
    fraction = device_fraction(info, sample)
    colour = _BAR_COLOURS[bar_style(fraction)]
    width = f"{min(max(fraction or 0.0, 0.0), 1.0) * 100:.1f}%"
    return (
        '<div style="margin:4px 0">'
        f"<div><b>{escape(render.device_label_text(info, sample))}</b></div>"
        '<div style="background:#e0e0e0;height:8px;border-radius:2px;margin:2px 0">'
        f'<div style="background:{colour};height:8px;border-radius:2px;width:{width}"></div>'
        "</div>"
        f"<div>{escape(render.device_stats_text(sample, info.simulated))}</div>"
        f"{render.memory_chart_svg(device_series(view, info))}</div>"
    )


class LiveDrawing:
    """One drawing as a display: its HTML, its title as text, and the mark that tells a
    frontend which words stand in for it once the kernel died or was restarted."""

    def __init__(self, view: PanelView) -> None:
        self.view = view

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, str], dict[str, Any]]:
        mark = to_json(LivePanel(render.STOPPED_BY_DEATH_TEXT, render.STOPPED_BY_RESTART_TEXT))
        bundle = {"text/plain": render.title_text(self.view), "text/html": panel_html(self.view)}
        return bundle, {LIVE_PANEL_METADATA: mark}
