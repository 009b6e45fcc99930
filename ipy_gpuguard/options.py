"""The options of one guarded cell, and the checks that turn a person's text into them."""

from __future__ import annotations

from dataclasses import dataclass

#: Sampling faster than this costs CPU and shows nothing more: peaks between two samples come
#: from the allocator's own high-water mark (seconds).
MIN_INTERVAL_S = 0.05


@dataclass(frozen=True)
class GuardOptions:
    """How one cell is guarded: the config's defaults with the magic's options laid over them.

    ``devices`` holds framework indices (``GPU:0`` is 0), ``None`` for every visible device.
    """

    interval_s: float = 0.5
    devices: tuple[int, ...] | None = None
    show_panel: bool = True


def check_interval(interval_s: float) -> float:
    if not interval_s >= MIN_INTERVAL_S:  # also refuses NaN
        raise ValueError(
            f"the interval must be at least {MIN_INTERVAL_S} seconds, not {interval_s:g}: "
            "peaks between samples come from the allocator, so faster sampling adds nothing"
        )
    return interval_s


def parse_device_list(text: str) -> tuple[int, ...]:
    """``"0,1"`` to ``(0, 1)``: the framework's device indices, as in ``GPU:0``."""
    parts = [part.strip() for part in text.split(",")]
    if not all(part.isdigit() for part in parts):
        raise ValueError(f"{text!r} is not a list of device indices like 0 or 0,1")
    return tuple(dict.fromkeys(int(part) for part in parts))
