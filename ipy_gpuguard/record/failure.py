"""What the guard kept of a failed cell, without the exception: the record a card is built from.

Exceptions are never kept: their frames pin the failed step's tensors. These hold the facts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..diagnosis import DeviceMemory
from ..telemetry.framework import FrameworkSettings
from ..watchdog import HangEvidence
from .forecast import Forecast
from .view import PanelView


@dataclass(frozen=True)
class FailedRun:
    """What the guard saw of the failed cell, without the exception."""

    panel: PanelView
    devices: tuple[DeviceMemory, ...]
    log_lines: tuple[str, ...]
    read_allocator: Callable[[], int | None]
    allocator_baseline_bytes: int | None
    settings: FrameworkSettings
    hang: HangEvidence | None = None
    watchdog_interrupted: bool = False
    #: What the guard foresaw of the cell's fit before it failed.
    forecast: Forecast | None = None


@dataclass(frozen=True)
class Reclaimed:
    """What freeing achieved: the allocator's bytes before the cell, before and after freeing.

    ``None`` where no framework allocator could be read (no framework imported, no GPU).
    """

    baseline_bytes: int | None
    before_bytes: int | None
    after_bytes: int | None
    frames_cleared: int

    @property
    def freed_bytes(self) -> int | None:
        if self.before_bytes is None or self.after_bytes is None:
            return None
        return max(self.before_bytes - self.after_bytes, 0)

    @property
    def held_bytes(self) -> int | None:
        """Bytes still held beyond what the allocator held before the cell started."""
        if self.baseline_bytes is None or self.after_bytes is None:
            return None
        return max(self.after_bytes - self.baseline_bytes, 0)


def in_one_line(error: BaseException, limit: int | None = None) -> str:
    """``Type: the first line of its message`` (cut to ``limit`` characters): how the guard
    says an error it keeps or reports of its own, which must never become a traceback of
    several lines in the person's output."""
    lines = str(error).strip().splitlines()
    first = lines[0][:limit] if lines else ""
    return f"{type(error).__name__}: {first}" if first else type(error).__name__
