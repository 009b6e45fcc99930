"""The retry part of an out-of-memory card, as text and escaped HTML: pure functions of the
card's :class:`~ipy_gpuguard.protocol.RetryState` and its batch edit."""

from __future__ import annotations

from html import escape

from ..protocol import AttemptRecord, BatchEdit, RetryOffer, RetryState, RetryVerdict
from ..telemetry.units import format_bytes

#: Said once, before the first click: a retry is not a resume.
RERUN_NOTE = "A retry reruns the whole cell from its first line."


def offer_text(offer: RetryOffer) -> list[str]:
    if offer.batch_size is None:
        return [f"Retry: not offered: {offer.reason}"]
    return [
        f"Retry: batch size {offer.batch_size} instead of {offer.current_batch_size} "
        f"({where_text(offer)}); %%gpuguard --auto-retry retries by itself, --find-max also "
        "finds the largest that fits.",
        *offer.notes,
        *rerun_lines(offer),
    ]


def rerun_lines(offer: RetryOffer) -> list[str]:
    """What runs again with a retry: said before the first one."""
    if not offer.reruns:
        return [RERUN_NOTE]
    return [f"{RERUN_NOTE} These run again:", *(f"  {line}" for line in offer.reruns)]


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


def attempt_text(attempt: AttemptRecord, capacity_bytes: int | None) -> str:
    """``batch size 96: fits (peak 6.1 GiB of 8 GiB)``."""
    if attempt.result == "fits":
        return (
            f"batch size {attempt.batch_size}: fits{peak_text(attempt.peak_bytes, capacity_bytes)}"
        )
    if attempt.result == "out_of_memory":
        return f"batch size {attempt.batch_size}: out of memory"
    return f"batch size {attempt.batch_size}: failed, not for memory ({attempt.error})"


def peak_text(peak_bytes: int | None, capacity_bytes: int | None) -> str:
    """`` (peak 6.1 GiB of 8 GiB)``, or nothing when no allocator was read."""
    if peak_bytes is None:
        return ""
    of = f" of {format_bytes(capacity_bytes)}" if capacity_bytes else ""
    return f" (peak {format_bytes(peak_bytes)}{of})"


def change_lines(edit: BatchEdit | None, offer: RetryOffer, size: int) -> list[str]:
    """The cell's changed lines, ``line 4: BATCH = 256 → BATCH = 64``, or the variable set."""
    if edit is not None and edit.batch_size == size:
        return [
            f"line {change.line}: {change.line_text.strip()} → {change.new_line_text.strip()}"
            for change in edit.edits
        ]
    target = offer.target
    if target is not None and target.in_namespace:
        return [f"{target.variable} = {size} (set in the namespace)"]
    return []


def verdict_lines(state: RetryState, edit: BatchEdit | None) -> list[str]:
    """Fixed, the next size, memory that did not come back, or no size that fits."""
    verdict = state.verdict
    if verdict is None:
        return []
    if verdict.state == "fixed":
        assert verdict.batch_size is not None
        fitted = next(a for a in reversed(state.attempts) if a.batch_size == verdict.batch_size)
        peak = peak_text(fitted.peak_bytes, state.capacity_bytes)
        searched = (
            f", the largest of {len(state.attempts)} tried by the search for the largest that fits"
            if verdict.searched
            else ""
        )
        return [
            f"Fixed: batch size {verdict.batch_size} fits{peak}{searched}",
            *change_lines(edit, state.offer, verdict.batch_size),
            "The notebook's cell still has the old size: change it to keep this one.",
            *(["Remembered for this cell on this device."] if verdict.remembered else []),
        ]
    if verdict.state == "gave_up":
        return [
            f"The model does not fit at any batch size down to {verdict.batch_size}: the card's "
            "other remedies say what else to try."
        ]
    if verdict.state == "memory_held":
        return _restart_lines(verdict, state, edit)
    if verdict.state == "other_error":
        return ["The cell failed for another reason than memory: its traceback is above."]
    return [f"Next: %gpuguard retry tries batch size {verdict.batch_size}."]


def retry_text(state: RetryState, edit: BatchEdit | None) -> list[str]:
    """The retry part of the text card: the offer, then each attempt and the verdict."""
    capacity = state.capacity_bytes
    lines = offer_text(state.offer)
    lines += [f"  retry: {attempt_text(attempt, capacity)}" for attempt in state.attempts]
    return lines + verdict_lines(state, edit)


def retry_html(state: RetryState, edit: BatchEdit | None) -> str:
    """The retry part of the HTML card (the widget card's too)."""
    offer = state.offer
    if offer.batch_size is None:
        return f'<div style="color:#666">Retry not offered: {escape(offer.reason)}</div>'
    head = (
        f"<div>Batch size {offer.batch_size} instead of {offer.current_batch_size} "
        f"({escape(where_text(offer))}).</div>"
        + "".join(f"<div>{escape(note)}</div>" for note in offer.notes)
        + _reruns_html(offer)
    )
    items = "".join(
        f"<li>{escape(attempt_text(attempt, state.capacity_bytes))}</li>"
        for attempt in state.attempts
    )
    attempts = f"<ol>{items}</ol>" if items else ""
    return head + attempts + _verdict_html(state, edit)


def _reruns_html(offer: RetryOffer) -> str:
    first, *rest = rerun_lines(offer)
    code = "".join(f"<div><code>{escape(line.strip())}</code></div>" for line in rest)
    return f"<div>{escape(first)}</div>{code}"


def _verdict_html(state: RetryState, edit: BatchEdit | None) -> str:
    lines = verdict_lines(state, edit)
    if not lines:
        return ""
    fixed = state.verdict is not None and state.verdict.state == "fixed"
    first = (
        f'<div style="color:#2e7d32;font-weight:bold">{escape(lines[0])}</div>'
        if fixed
        else f"<div>{escape(lines[0])}</div>"
    )
    rest = "".join(
        f"<div><code>{escape(line)}</code></div>"
        if line.startswith("line ")
        else f"<div>{escape(line)}</div>"
        for line in lines[1:]
    )
    return first + rest


def _restart_lines(verdict: RetryVerdict, state: RetryState, edit: BatchEdit | None) -> list[str]:
    assert verdict.held_bytes is not None
    assert verdict.batch_size is not None
    changes = change_lines(edit, state.offer, verdict.batch_size)
    change = "; ".join(changes) if changes else f"set the batch size to {verdict.batch_size}"
    return [
        f"Memory did not come back ({format_bytes(verdict.held_bytes)} still held): a retry in "
        "this kernel would fail again. In a fresh kernel:",
        "  1. Restart the kernel (Kernel ▸ Restart Kernel).",
        f"  2. Change the batch size: {change}.",
        "  3. Run all cells above this one, then this one (Run ▸ Run All Above).",
    ]
