"""The record of a guarded run, pure data: what the panel shows while it runs and keeps once it
has ended, what the guard saw of a failure, and what freeing its memory gave back. Built by the
shell, read by ``cards/`` (which decides what a card says) and ``ui/`` (which draws it)."""

from .failure import FailedRun, Reclaimed, in_one_line
from .forecast import Basis, Capacity, Forecast, Growth, Unforeseen
from .view import (
    PanelView,
    WatchView,
    bar_style,
    device_fraction,
    device_series,
    used_fraction,
)

__all__ = [
    "Basis",
    "Capacity",
    "FailedRun",
    "Forecast",
    "Growth",
    "PanelView",
    "Reclaimed",
    "Unforeseen",
    "WatchView",
    "bar_style",
    "device_fraction",
    "device_series",
    "in_one_line",
    "used_fraction",
]
