"""The retry part of an out-of-memory card, as text and escaped HTML: the card's own words
(:class:`~ipy_gpuguard.protocol.CardWords`), laid out; nothing here words or decides."""

from __future__ import annotations

from html import escape

from ..protocol import Card


def retry_text(card: Card) -> list[str]:
    """The retry part of the text card: the offer, then each attempt and the verdict."""
    words = card.words
    lines = list(words.offer)
    lines += [f"  retry: {attempt.line}" for attempt in words.attempts]
    return lines + list(words.verdict) + ([words.edit] if words.edit else [])


def retry_html(card: Card) -> str:
    """The retry part of the HTML card: the offer, the attempts' table, the verdict, the edit."""
    words = card.words
    offer = "".join(_line_html(line) for line in words.offer)
    rows = "".join(
        f"<tr><td>{attempt.batch_size}</td><td>{escape(attempt.result)}</td>"
        f"<td>{escape(attempt.peak)}</td></tr>"
        for attempt in words.attempts
    )
    attempts = (
        f"<table><tr><th>batch size</th><th>result</th><th>peak memory</th></tr>{rows}</table>"
        if rows
        else ""
    )
    return offer + attempts + _verdict_html(card)


def _line_html(line: str) -> str:
    """A line of code (what runs again, an edit) in code type, the rest as prose."""
    if line.startswith("  "):
        return f"<div><code>{escape(line.strip())}</code></div>"
    return f"<div>{escape(line)}</div>"


def _verdict_html(card: Card) -> str:
    verdict = card.words.verdict
    if not verdict:
        return ""
    retry = card.retry
    fixed = retry is not None and retry.verdict is not None and retry.verdict.state == "fixed"
    style = ' style="color:#2e7d32;font-weight:bold"' if fixed else ""
    first = f'<div class="ipy-gpuguard-verdict"{style}>{escape(verdict[0])}</div>'
    edit = f"<div>{escape(card.words.edit)}</div>" if card.words.edit else ""
    return first + "".join(_line_html(line) for line in verdict[1:]) + edit
