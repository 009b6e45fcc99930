"""The options of one guarded cell, and the checks that turn a person's text into them."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..retry import RetrySettings
from ..watchdog.limits import FIRST_STEP_ALLOWANCE_S

#: Sampling faster than this costs CPU and shows nothing more: peaks between two samples come
#: from the allocator's own high-water mark (seconds).
MIN_INTERVAL_S = 0.05
#: The longest interval and timeout a thread can wait for (seconds): a day.
MAX_SECONDS = 86_400.0


@dataclass(frozen=True)
class GuardOptions:
    """How one cell is guarded: the config's defaults with the magic's options laid over them.

    ``devices`` holds framework indices (``GPU:0`` is 0), ``None`` for every visible device.
    """

    interval_s: float = 0.5
    devices: tuple[int, ...] | None = None
    show_panel: bool = True
    timeout_s: float | None = None  # no progress for this long is a stall; None: adaptive
    on_hang: str = "report"  # or "interrupt"
    first_step_s: float = FIRST_STEP_ALLOWANCE_S
    retry: RetrySettings = field(default_factory=RetrySettings)


def check_interval(interval_s: float) -> float:
    if not MIN_INTERVAL_S <= interval_s <= MAX_SECONDS:  # also refuses NaN and infinity
        raise ValueError(
            f"the interval is a number of seconds from {MIN_INTERVAL_S} to {MAX_SECONDS:g}, not "
            f"{interval_s:g}: peaks between samples come from the allocator, so faster sampling "
            "adds nothing"
        )
    return interval_s


#: What ``--on-hang`` accepts: show the hang card only, or also interrupt the cell.
ON_HANG_CHOICES = ("report", "interrupt")


def check_timeout(timeout_s: float, interval_s: float | None = None) -> float:
    """A timeout the watchdog can keep; with the cell's sampling interval, at least that (it
    looks once an interval: a shorter limit would say "limit 0 ms" and call every look a
    stall)."""
    if not 0 < timeout_s <= MAX_SECONDS:  # also refuses NaN and infinity
        raise ValueError(
            "the timeout is the number of seconds without progress that make a stall, like 60 "
            f"(at most {MAX_SECONDS:g}), not {timeout_s:g}"
        )
    if interval_s is not None and timeout_s < interval_s:
        raise ValueError(
            f"the timeout ({timeout_s:g} s) is shorter than the sampling interval "
            f"({interval_s:g} s): the watchdog looks once an interval; give a longer --timeout or a "
            "shorter --interval"
        )
    return timeout_s


def parse_device_list(text: str) -> tuple[int, ...]:
    """``"0,1"`` to ``(0, 1)``: the framework's device indices, as in ``GPU:0``."""
    parts = [part.strip() for part in text.split(",")]
    if not all(part.isdigit() for part in parts):
        raise ValueError(f"{text!r} is not a list of device indices like 0 or 0,1")
    return tuple(dict.fromkeys(int(part) for part in parts))
