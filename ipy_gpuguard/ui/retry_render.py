"""The retry part of an out-of-memory card, as text and escaped HTML: pure functions."""

from __future__ import annotations

from html import escape

from ..retry import RetryOffer

#: Said once, before the first click: a retry is not a resume.
RERUN_NOTE = "A retry reruns the whole cell from its first line."


def offer_text(offer: RetryOffer) -> list[str]:
    if offer.size is None:
        return [f"Retry: not offered: {offer.reason}"]
    return [
        f"Retry: batch size {offer.size} instead of {offer.current} ({offer.where}); "
        "%%gpuguard --auto-retry retries by itself, --find-max also finds the largest that fits.",
        *offer.notes,
    ]


def offer_html(offer: RetryOffer) -> str:
    if offer.size is None:
        return f'<div style="color:#666">Retry not offered: {escape(offer.reason)}</div>'
    notes = "".join(f"<div>{escape(note)}</div>" for note in offer.notes)
    return f"<div>Batch size {offer.size} instead of {offer.current} ({escape(offer.where)}).</div>{notes}"


def attempts_html(lines: list[str], final: str = "") -> str:
    items = "".join(f"<li>{escape(line)}</li>" for line in lines)
    return f"<ol>{items}</ol>{final}" if items else final


def fixed_html(line: str, changes: list[str], remembered: bool) -> str:
    """The card's success: which size fits, at what peak, and the line that changed."""
    diff = "".join(f"<div><code>{escape(change)}</code></div>" for change in changes)
    memo = "<div>Remembered for this cell on this device.</div>" if remembered else ""
    return (
        f'<div style="color:#2e7d32;font-weight:bold">Fixed: {escape(line)}</div>{diff}'
        "<div>The notebook's cell still has the old size: change it to keep this one.</div>"
        f"{memo}"
    )
