"""Every sentence of a card beyond the diagnosis' own text, worded once.

The text card, the HTML card, the widget controls and the lab extension print these sentences
(:class:`~ipy_gpuguard.protocol.CardWords`) and word nothing themselves, so that a card says the
same thing in every frontend. An unknown figure is said in words, never as ``?`` or ``n/a``.
"""

from __future__ import annotations

from ..protocol import (
    AttemptRecord,
    AttemptWords,
    BatchEdit,
    Fact,
    Reclaim,
    RetryOffer,
    RetryState,
    RetryVerdict,
)
from ..retry.attempts import too_much_held
from ..retry.search import MAX_JUMP_DOWN
from ..retry.verdict import FIXED, MEMORY_HELD, NEXT
from ..telemetry.units import format_bytes

#: Said once, before the first attempt: a retry is not a resume.
RERUN_NOTE = "A retry reruns the whole cell from its first line."
#: A peak the allocator did not measure (TensorFlow keeps no statistics on the CPU by default).
NOT_MEASURED = "not measured: the allocator keeps no statistics here"


def reclaim_text(reclaim: Reclaim, capacity_bytes: int | None = None, fixed: bool = False) -> str:
    """What freeing did, in one sentence, whichever of its figures are known. What is still
    held is a warning only when it is enough to make a retry fail (on a device of
    ``capacity_bytes``) and no retry has ``fixed`` the cell since."""
    if reclaim.pending:
        return "Freeing the memory the failure pinned…"
    freed, held = reclaim.freed_bytes, reclaim.held_bytes
    if freed is None:
        return (
            f"Cleared {reclaim.frames_cleared} frames of the failed call and collected garbage; "
            "no framework allocator to measure what came back."
        )
    text = f"Freed {format_bytes(freed)}"
    if held is None:
        return text + "."
    if held == 0:
        return text + ": the allocator is back where it was before the cell."
    if fixed or not too_much_held(held, capacity_bytes):
        return (
            text + f"; the allocator holds {format_bytes(held)} more than before the cell "
            "(variables the cell made, like an optimizer's on a model's first fit, or memory "
            "the framework keeps)."
        )
    return (
        text + f"; the allocator still holds {format_bytes(held)} more than before the cell "
        "(variables of the notebook, or memory the framework keeps): a retry in this kernel may "
        "fail again, a kernel restart frees it all."
    )


def offer_lines(offer: RetryOffer, facts: tuple[Fact, ...] = ()) -> tuple[str, ...]:
    """The retry's offer, why its size differs from the estimate, and what runs again."""
    if offer.batch_size is None:
        return (f"Retry: not offered: {offer.reason}",)
    return (
        f"Retry: batch size {offer.batch_size} instead of {offer.current_batch_size} "
        f"({where_text(offer)}); %%gpuguard --auto-retry retries by itself, --find-max also "
        "finds the largest that fits.",
        *_estimate_lines(offer, facts),
        *offer.notes,
        *rerun_lines(offer),
    )


def search_lines(offer: RetryOffer) -> tuple[str, ...]:
    """A search from a cell that fitted: what it changes, what it noticed, what runs again."""
    return (
        f"Search: the batch size is {offer.current_batch_size} ({where_text(offer)}); "
        "%%gpuguard --find-max searches by itself.",
        *offer.notes,
        *rerun_lines(offer),
    )


def _estimate_lines(offer: RetryOffer, facts: tuple[Fact, ...]) -> tuple[str, ...]:
    """Why the offered size is not the diagnosis' estimate, when it is larger."""
    estimate = next((fact for fact in facts if fact.name == "fit_fraction"), None)
    current, size = offer.current_batch_size, offer.batch_size
    if estimate is None or not isinstance(estimate.value, float) or not current or not size:
        return ()
    if size <= estimate.value * current:
        return ()
    return (
        f"The estimate of what fits is {estimate.text}; one step divides the batch by at most "
        f"{MAX_JUMP_DOWN}, so a retry tries {size} first and goes lower only if it must.",
    )


def rerun_lines(offer: RetryOffer) -> tuple[str, ...]:
    """What runs again with a retry: said before the first one."""
    if not offer.reruns:
        return (RERUN_NOTE,)
    return (f"{RERUN_NOTE} These run again:", *(f"  {line}" for line in offer.reruns))


def where_text(offer: RetryOffer) -> str:
    """What a retry changes: ``line 4: BATCH = 256``, or an earlier cell's variable."""
    target = offer.target
    if target is None:
        return ""
    if target.in_namespace:
        return (
            f"{target.variable}, a variable of an earlier cell, set in the namespace before the run"
        )
    return f"line {target.line}: {target.line_text}"


def attempt_words(attempt: AttemptRecord, capacity_bytes: int | None) -> AttemptWords:
    """One attempt as the card's table shows it, and in one line: ``batch size 96: fits
    (peak 6.1 GiB of 8 GiB)`` (a peak that was not measured is left out of the line)."""
    if attempt.result == "fits":
        result = "fits"
    elif attempt.result == "out_of_memory":
        result = "out of memory"
    elif attempt.result == "stopped":
        result = "stopped at your interrupt"
    else:
        result = f"failed, not for memory ({attempt.error})"
    if attempt.probe:
        result = f"probe: {result}"
    peak = NOT_MEASURED
    line = f"batch size {attempt.batch_size}: {result}"
    if attempt.peak_bytes is not None:
        of = f" of {format_bytes(capacity_bytes)}" if capacity_bytes else ""
        peak = f"{format_bytes(attempt.peak_bytes)}{of}"
        line += f" (peak {peak})" if attempt.result == "fits" else ""
    return AttemptWords(attempt.batch_size, result, peak, line)


def attempt_text(attempt: AttemptRecord, capacity_bytes: int | None) -> str:
    """An attempt in one line."""
    return attempt_words(attempt, capacity_bytes).line


def change_lines(edit: BatchEdit | None, offer: RetryOffer, size: int) -> tuple[str, ...]:
    """The cell's changed lines, ``line 4: BATCH = 256 → BATCH = 64``, or the variable set."""
    if edit is not None and edit.batch_size == size:
        return tuple(
            f"line {change.line}: {change.line_text.strip()} → {change.new_line_text.strip()}"
            for change in edit.edits
        )
    target = offer.target
    if target is not None and target.in_namespace:
        return (f"{target.variable} = {size} (set in the namespace)",)
    return ()


def edit_text(edit: BatchEdit | None, state: RetryState) -> str:
    """The edit that keeps a size that fitted in the cell, worded as a proposal: the cell is
    unchanged until the person applies it. Empty until a size has fitted."""
    verdict = state.verdict
    if edit is None or verdict is None or verdict.state != "fixed":
        return ""
    offer = state.offer
    changes = "; ".join(change_lines(edit, offer, edit.batch_size))
    return f"To keep batch size {edit.batch_size}, the cell would change: {changes}."


def verdict_lines(
    state: RetryState, edit: BatchEdit | None, applied: int | None = None
) -> tuple[str, ...]:
    """Fixed, the next size, memory that did not come back, or no size that fits; the first
    line is the headline. ``applied``: the size the card's Apply wrote into the cell."""
    verdict = state.verdict
    if verdict is None:
        return ()
    return (*_verdict_lines(verdict, state, edit, applied), *verdict.notes)


def _verdict_lines(
    verdict: RetryVerdict, state: RetryState, edit: BatchEdit | None, applied: int | None
) -> tuple[str, ...]:
    if verdict.state == "fixed":
        return _fixed_lines(verdict, state, applied)
    if verdict.state == "gave_up":
        return (
            f"The model does not fit at any batch size down to {verdict.batch_size}: the card's "
            "other remedies say what else to try.",
        )
    if verdict.state == "memory_held":
        return _restart_lines(verdict, state, edit)
    if verdict.state == "other_error":
        return ("The cell failed for another reason than memory: its traceback is above.",)
    if verdict.state == "stopped":
        kept = (
            f"as the cell's run at batch size {verdict.batch_size} left it"
            if verdict.batch_size is not None
            else "as it was before the cell"
        )
        return (f"Stopped at your interrupt: no further attempt runs, and the model is {kept}.",)
    return (_next_line(verdict, state),)


def _next_line(verdict: RetryVerdict, state: RetryState) -> str:
    """The next size: a run of a size that already fitted trains the model at it; while the
    attempts run, the guard's own next step, else what the person can do next."""
    size = verdict.batch_size
    fitted = any(a.batch_size == size and a.result == "fits" for a in state.attempts)
    if fitted:
        step = f"Next: a run at batch size {size}, which fitted, trains the model at it"
    else:
        step = f"Next: batch size {size}"
    if state.running:
        return step + "."
    return step + " (Retry on this card, or %gpuguard retry)."


def _fixed_lines(verdict: RetryVerdict, state: RetryState, applied: int | None) -> tuple[str, ...]:
    assert verdict.batch_size is not None
    fitted = next(a for a in reversed(state.attempts) if a.batch_size == verdict.batch_size)
    peak = f" (peak {attempt_words(fitted, state.capacity_bytes).peak})"
    searched = (
        f", the largest of {len(state.attempts)} tried by the search for the largest that fits"
        if verdict.searched
        else ""
    )
    offer = state.offer
    in_source = offer.target is not None and not offer.target.in_namespace
    says = applied if applied is not None else offer.current_batch_size
    return (
        f"Fixed: batch size {verdict.batch_size} fits"
        f"{peak if fitted.peak_bytes is not None else ''}{searched}.",
        *(
            (
                f"The cell's source {'says' if applied is not None else 'still says'} {says}: "
                f"change it to keep {verdict.batch_size}.",
            )
            if in_source and says != verdict.batch_size
            else ()
        ),
        *(("Remembered for this cell on this device.",) if verdict.remembered else ()),
    )


def _restart_lines(
    verdict: RetryVerdict, state: RetryState, edit: BatchEdit | None
) -> tuple[str, ...]:
    assert verdict.held_bytes is not None
    assert verdict.batch_size is not None
    changes = change_lines(edit, state.offer, verdict.batch_size)
    change = "; ".join(changes) if changes else f"set the batch size to {verdict.batch_size}"
    return (
        f"Memory did not come back ({format_bytes(verdict.held_bytes)} still held): a retry in "
        "this kernel would fail again. In a fresh kernel:",
        "  1. Restart the kernel.",
        f"  2. Change the batch size: {change}.",
        "  3. Run the cells above this one, then this one.",
    )


def batch_remedy_steps(retry: RetryState) -> tuple[str, ...] | None:
    """The smaller-batch remedy's step once the retry knows more than the diagnosis' estimate
    (the catalog's step quotes the estimate, which a measured size or the offer overrules);
    ``None`` when it does not."""
    verdict = retry.verdict
    if verdict is None:
        size = retry.offer.batch_size
        if size is None:
            return None
        return (f"Lower batch_size in the cell to {size}, what a retry tries first, and run it.",)
    if verdict.batch_size is None:
        return None
    if verdict.state == FIXED:
        return (
            f"Keep batch size {verdict.batch_size} in the cell: a retry measured that it fits.",
        )
    if verdict.state == NEXT:
        return (f"Lower batch_size in the cell to {verdict.batch_size}, the next size to try.",)
    if verdict.state == MEMORY_HELD:
        return (
            f"Restart the kernel, then run the cell with batch size {verdict.batch_size}: the "
            "memory of the failure did not come back in this one.",
        )
    return None
