"""The options of one guarded cell, and the checks that turn a person's text into them."""

from __future__ import annotations

from dataclasses import dataclass

from .watchdog.limits import FIRST_STEP_ALLOWANCE_S

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
    auto_retry: int = 0  # attempts a failed cell may make by itself; 0: only when clicked
    find_max: bool = False
    margin: float = 0.1
    min_batch: int = 1
    keep_effective_batch: bool = False
    batch_var: str | None = None
    timeout_s: float | None = None  # no progress for this long is a stall; None: adaptive
    on_hang: str = "report"  # or "interrupt"
    first_step_s: float = FIRST_STEP_ALLOWANCE_S


#: Attempts of ``--auto-retry`` without a number, and with ``--find-max``.
AUTO_RETRY_RUNS = 5
FIND_MAX_RUNS = 12
#: What ``--auto-retry`` without a number parses to: the default for the search asked for.
DEFAULT_RUNS = -1


def check_interval(interval_s: float) -> float:
    if not interval_s >= MIN_INTERVAL_S:  # also refuses NaN
        raise ValueError(
            f"the interval must be at least {MIN_INTERVAL_S} seconds, not {interval_s:g}: "
            "peaks between samples come from the allocator, so faster sampling adds nothing"
        )
    return interval_s


#: What ``--on-hang`` accepts: show the hang card only, or also interrupt the cell.
ON_HANG_CHOICES = ("report", "interrupt")


def check_timeout(timeout_s: float) -> float:
    if not timeout_s > 0:  # also refuses NaN
        raise ValueError(
            f"--timeout is the number of seconds without progress that make a stall, like 60, "
            f"not {timeout_s:g}"
        )
    return timeout_s


def parse_device_list(text: str) -> tuple[int, ...]:
    """``"0,1"`` to ``(0, 1)``: the framework's device indices, as in ``GPU:0``."""
    parts = [part.strip() for part in text.split(",")]
    if not all(part.isdigit() for part in parts):
        raise ValueError(f"{text!r} is not a list of device indices like 0 or 0,1")
    return tuple(dict.fromkeys(int(part) for part in parts))


def retry_options(
    auto_retry: int | None,
    find_max: bool,
    margin_percent: float | None,
    min_batch: int | None,
    batch_var: str | None,
) -> dict[str, object]:
    """The retry fields of :class:`GuardOptions` from the magic's options, checked."""
    if auto_retry is not None and auto_retry < 1 and auto_retry != DEFAULT_RUNS:
        raise ValueError(f"--auto-retry takes a number of attempts of at least 1, not {auto_retry}")
    if margin_percent is not None and not 0 < margin_percent < 100:
        raise ValueError(
            f"--margin is a percentage between 0 and 100, like 10, not {margin_percent:g}"
        )
    if min_batch is not None and min_batch < 1:
        raise ValueError(f"--min-batch is a batch size of at least 1, not {min_batch}")
    if batch_var is not None and not batch_var.isidentifier():
        raise ValueError(f"--batch-var takes a variable name like BATCH_SIZE, not {batch_var!r}")
    default_runs = FIND_MAX_RUNS if find_max else AUTO_RETRY_RUNS
    if auto_retry is None:
        runs = FIND_MAX_RUNS if find_max else 0  # --find-max alone implies --auto-retry
    else:
        runs = default_runs if auto_retry == DEFAULT_RUNS else auto_retry
    fields: dict[str, object] = {"auto_retry": runs, "find_max": find_max, "batch_var": batch_var}
    if margin_percent is not None:
        fields["margin"] = margin_percent / 100
    if min_batch is not None:
        fields["min_batch"] = min_batch
    return fields
