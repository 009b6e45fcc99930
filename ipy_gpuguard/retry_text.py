"""Retries without widgets (a terminal, ``%gpuguard retry``): each attempt summed up in a line."""

from __future__ import annotations

from .retry import Attempt, CellRetry, attempt_line, peak_text
from .telemetry.units import format_bytes

PREFIX = "ipy_gpuguard · "


def retry_printing(
    retry: CellRetry, runs: int, find_max: bool, size: int | None = None
) -> Attempt | None:
    """Attempt by itself (or once at ``size``); the attempts' own output shows as they run."""
    capacity = retry.setup.capacity_bytes

    def report(attempt: Attempt) -> None:
        print(f"{PREFIX}retry: {attempt_line(attempt, capacity)}")

    if size is not None:
        attempt = retry.attempt(size)
        report(attempt)
        last: Attempt | None = attempt
    else:
        last = retry.auto(runs, find_max, report)
    for line in outcome_lines(retry, last):
        print(line)
    return last


def outcome_lines(retry: CellRetry, last: Attempt | None) -> list[str]:
    """Fixed, the next size, memory that did not come back, or no size that fits."""
    if last is None:
        return []
    if last.fits and retry.search.finished:
        changes = last.change_lines()
        peak = peak_text(last.outcome.peak_bytes, retry.setup.capacity_bytes)
        return [
            f"{PREFIX}fixed: batch size {last.size} fits{peak}",
            *(f"  {change}" for change in changes),
            "  the notebook's cell still has the old size: change it to keep this one",
        ]
    if retry.search.gave_up:
        return [
            f"{PREFIX}the model does not fit at any batch size down to "
            f"{retry.search.settings.min_batch}: the card's other remedies say what else to try."
        ]
    step = retry.suggestion()
    held = retry.memory_held(last)
    if held is not None:
        size = step.size if step is not None else last.size
        return [
            f"{PREFIX}memory did not come back ({format_bytes(held)} still held): a retry in "
            "this kernel would fail again. In a fresh kernel:",
            *(f"  {n}. {line}" for n, line in enumerate(retry.restart_steps(size), 1)),
        ]
    if not last.outcome.out_of_memory:
        return [f"{PREFIX}the cell failed for another reason than memory: its traceback is above"]
    if step is not None:
        return [f"{PREFIX}next: %gpuguard retry tries batch size {step.size}"]
    return []
