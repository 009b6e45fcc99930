"""From a cell that ran out of memory to the retry its card offers, or the reason it offers none."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any

from .batch import (
    BatchFinding,
    BatchMemory,
    Remembered,
    Rewrite,
    Trial,
    cell_key,
    find_batch_size,
    without_batch_size,
)
from .batch.source import CellSource
from .diagnosis import Diagnosis
from .options import GuardOptions
from .retry import CellRetry, RetryOffer, RetryRequest, RetrySetup, RunOutcome


def plan_retry(
    cell: str,
    options: GuardOptions,
    diagnosis: Diagnosis,
    failing_line: int | None,
    namespace: Mapping[str, Any],
    device_bytes: tuple[int, ...],
    baseline_bytes: int | None,
    memory: BatchMemory | None,
    run: Callable[[Rewrite], RunOutcome],
) -> RetryRequest:
    """The retries of ``cell``: its batch size, the first size to try, what the card says.

    Parameters
    ----------
    device_bytes
        Memory of each watched device: the capacity the search aims under, and the device
        part of the remembered sizes' key.
    baseline_bytes
        The allocator's bytes before the cell: what memory must come back to between attempts.
    """
    finding = find_batch_size(cell, options.batch_var, failing_line)
    target = finding.target
    if target is None:
        choices = tuple(choice.name or "" for choice in finding.choices)
        return RetryRequest(None, RetryOffer(None, reason=finding.reason, choices=choices))
    current = (
        target.literal.value if target.literal is not None else namespace.get(target.name or "")
    )
    if type(current) is not int or current < 1:
        reason = (
            f"{target.name} in the namespace is {current!r}, not a batch size: set it to a number, "
            "or name another variable with %%gpuguard --batch-var NAME"
        )
        return RetryRequest(None, RetryOffer(None, reason=reason))
    key = cell_key(without_batch_size(cell, finding), device_bytes)
    remembered = memory.recall(key) if memory is not None else None
    fit_fraction = diagnosis.facts.get("fit_fraction")
    setup = RetrySetup(
        cell=cell,
        finding=finding,
        current_size=current,
        first_failure=Trial(
            current, False, fit_fraction=fit_fraction if isinstance(fit_fraction, float) else None
        ),
        capacity_bytes=sum(device_bytes) if device_bytes else None,
        baseline_bytes=baseline_bytes,
        min_batch=options.min_batch,
        margin=options.margin,
        keep_effective_batch=options.keep_effective_batch,
        remembered=remembered,
        memory=memory,
        memory_key=key,
    )
    retry = CellRetry(setup, run, find_max=options.find_max)
    step = retry.suggestion()
    if step is None:
        reason = (
            f"the batch size is {current}, already at the floor (--min-batch {options.min_batch})"
        )
        return RetryRequest(None, RetryOffer(None, current, reason=reason))
    offer = RetryOffer(
        step.size,
        current,
        where=_where(cell, finding),
        notes=_notes(finding, options, remembered, current, step.size),
    )
    return RetryRequest(retry, offer, options.auto_retry, options.find_max)


def failing_cell_line(error: BaseException) -> int | None:
    """The line of the cell the error came from: the traceback's first module-level frame."""
    tb: TracebackType | None = error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_name == "<module>":
            return tb.tb_lineno
        tb = tb.tb_next
    return None


def remembered_note(
    cell: str, options: GuardOptions, device_bytes: tuple[int, ...], memory: BatchMemory
) -> str | None:
    """The panel's note when a size that fitted this cell on this device is remembered."""
    finding = find_batch_size(cell, options.batch_var)
    if finding.target is None:
        return None
    remembered = memory.recall(cell_key(without_batch_size(cell, finding), device_bytes))
    if remembered is None:
        return None
    return (
        f"batch size {remembered.batch_size} fitted this cell on this device before: a retry "
        "starts there"
    )


def _where(cell: str, finding: BatchFinding) -> str:
    target = finding.target
    assert target is not None
    if target.literal is None:
        return f"{target.name}, a variable of an earlier cell, set in the namespace before the run"
    line = CellSource(cell).line_text(target.literal.line).strip()
    return f"line {target.literal.line}: {line}"


def _notes(
    finding: BatchFinding,
    options: GuardOptions,
    remembered: Remembered | None,
    current: int,
    size: int,
) -> tuple[str, ...]:
    notes = []
    if remembered is not None and remembered.batch_size == size:
        notes.append(f"Batch size {size} fitted this cell on this device before (remembered).")
    if options.keep_effective_batch and finding.accumulation is None:
        notes.append(
            f"The effective batch changes from {current} to {size}: there is no "
            "gradient_accumulation_steps in the cell to keep it (Keras 3 optimizers take one)."
        )
    elif options.keep_effective_batch:
        notes.append(
            "gradient_accumulation_steps grows as the batch shrinks: the effective batch stays."
        )
    return tuple(notes)
