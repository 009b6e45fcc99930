"""The remediation card as text and escaped HTML: pure functions of a :class:`~ipy_gpuguard.protocol.Card`.

The widget card shows the same HTML, plus buttons; a saved notebook, nbconvert and a terminal
show these renderings; the lab extension renders the card's JSON itself. Everything that comes
from the error (messages, op names) is escaped: an error message containing HTML shows as text.
"""

from __future__ import annotations

from html import escape
from typing import Any

from ..protocol import CARD_MIME, Card, to_json
from . import render, retry_render
from .remedy_render import remedies_html

#: The evidence keeps its layout: a thread's stack is indented under its name.
_EVIDENCE = '<ul style="white-space:pre-wrap">{}</ul>'
#: Remedies spelled out in the text card, the most likely first; the rest are named.
TEXT_REMEDIES = 3

_KIND_COLOURS = {
    "oom": "#c62828",
    "hang": "#ef6c00",
    "fault": "#c62828",
    "mismatch": "#6a1b9a",
    "no_gpu": "#455a64",
    "data": "#1565c0",
    "unknown": "#616161",
}


def card_bundle(card: Card) -> dict[str, Any]:
    """The card's lasting forms: text, HTML and its data for the lab extension."""
    return {"text/plain": card_text(card), "text/html": card_html(card), CARD_MIME: to_json(card)}


def card_text(card: Card) -> str:
    lines = [f"ipy_gpuguard · {card.title} [{card.rule_id}]", card.summary]
    width = max((len(fact.label) for fact in card.facts), default=0)
    lines += [f"  {fact.label:<{width}}  {fact.text}" for fact in card.facts]
    for item in evidence_items(card.evidence):
        lines.append(f"  · {item[0]}")
        lines += [f"    {line}" for line in item[1:]]
    if card.words.reclaim:
        lines.append(card.words.reclaim)
    lines += list(card.notes)
    if card.retry is not None:
        lines += retry_render.retry_text(card)
    if card.remedies:
        lines.append("What to do:")
    for number, remedy in enumerate(card.remedies[:TEXT_REMEDIES], 1):
        lines.append(f"  {number}. {remedy.title}: {remedy.why}")
        lines += [f"     - {step}" for step in remedy.steps]
        if remedy.note:
            lines.append(f"     ({remedy.note})")
    more = card.remedies[TEXT_REMEDIES:]
    if more:
        lines.append("  Also: " + "; ".join(remedy.title for remedy in more) + ".")
    return "\n".join(lines)


def evidence_items(evidence: tuple[str, ...]) -> list[list[str]]:
    """The evidence as items: an indented line (a frame of a thread's stack) belongs to the
    item above it, so that a stack is one item, not one per line."""
    items: list[list[str]] = []
    for line in evidence:
        if line.startswith(" ") and items:
            items[-1].append(line)
        else:
            items.append([line])
    return items


def card_header_html(card: Card, below: str = "") -> str:
    """Title, sentence, facts, evidence and chart, then ``below``, inside the card's coloured
    border: the part of the card that is not buttons."""
    colour = _KIND_COLOURS.get(card.kind, _KIND_COLOURS["unknown"])
    rows = "".join(
        f'<tr><td style="color:#666;padding-right:1em">{escape(fact.label)}</td>'
        f"<td><code>{escape(fact.text)}</code></td></tr>"
        for fact in card.facts
    )
    items = ("\n".join(item) for item in evidence_items(card.evidence))
    evidence = "".join(f"<li>{escape(item)}</li>" for item in items)
    notes = "".join(f"<div>{escape(note)}</div>" for note in card.notes)
    chart = "".join(render.memory_chart_svg(series) for series in card.chart)
    return (
        f'<div style="border-left:4px solid {colour};padding-left:8px">'
        f'<div style="font-weight:bold;color:{colour}">{escape(card.title)} '
        f'<span style="font-weight:normal;color:#888;font-size:smaller">{escape(card.rule_id)}</span></div>'
        f"<div>{escape(card.summary)}</div>"
        f"{f'<table>{rows}</table>' if rows else ''}"
        f"{_EVIDENCE.format(evidence) if evidence else ''}"
        f"{chart}{notes}{below}</div>"
    )


def status_html(card: Card) -> str:
    """What freeing did."""
    return f"<div>{escape(card.words.reclaim)}</div>" if card.words.reclaim else ""


def card_html(card: Card) -> str:
    """The whole card as static HTML."""
    remedies = remedies_html(card.remedies)
    retry = retry_render.retry_html(card) if card.retry is not None else ""
    what_to_do = f"<div><b>What to do</b></div>{remedies}" if remedies else ""
    return (
        '<div class="ipy-gpuguard-card" style="font-size:13px">'
        f"{card_header_html(card, status_html(card) + retry + what_to_do)}</div>"
    )
