"""The remediation card as text, escaped HTML and JSON: pure functions of a :class:`CardView`.

The widget card shows the same HTML, plus buttons; a saved notebook, nbconvert and a terminal
show these renderings; the lab extension reads the JSON. Everything that comes from the error
(messages, op names) is escaped: an error message containing HTML shows as text.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Any

from ..diagnosis import Diagnosis, Kind
from ..diagnosis.facts import FACT_LABELS, fact_text
from ..reclaim import Reclaimed
from ..retry import RetryOffer
from ..telemetry.units import format_bytes
from . import render, retry_render
from .remedy_render import remedies_html, remedy_data
from .view import PanelView

#: The vendor MIME type of the card's data, for the lab extension.
CARD_MIME = "application/vnd.ipy-gpuguard.card+json"
CARD_DATA_VERSION = 1
#: Remedies spelled out in the text card, the most likely first; the rest are named.
TEXT_REMEDIES = 3

_KIND_COLOURS = {
    Kind.OUT_OF_MEMORY: "#c62828",
    Kind.HANG: "#ef6c00",
    Kind.FAULT: "#c62828",
    Kind.MISMATCH: "#6a1b9a",
    Kind.NO_GPU: "#455a64",
    Kind.DATA: "#1565c0",
    Kind.UNKNOWN: "#616161",
}


@dataclass(frozen=True)
class CardView:
    """What one card shows: the diagnosis, what freeing memory did, the run's memory chart.

    ``notes`` are consequences the person should know about (``%debug`` after freeing);
    ``retry`` is the smaller batch an out-of-memory card offers, or why it offers none.
    """

    diagnosis: Diagnosis
    reclaimed: Reclaimed | None = None
    panel: PanelView | None = None
    notes: tuple[str, ...] = ()
    retry: RetryOffer | None = None


def facts_rows(diagnosis: Diagnosis) -> list[tuple[str, str]]:
    """``(label, value)`` for each known fact, in the catalog's order."""
    ordered = [name for name in FACT_LABELS if name in diagnosis.facts]
    ordered += [name for name in diagnosis.facts if name not in FACT_LABELS]
    return [(FACT_LABELS.get(name, name), fact_text(diagnosis.facts, name)) for name in ordered]


def reclaimed_text(reclaimed: Reclaimed) -> str:
    """What freeing did, in one sentence."""
    freed, held = reclaimed.freed_bytes, reclaimed.held_bytes
    if freed is None:
        return (
            f"Cleared {reclaimed.frames_cleared} frames of the failed call and collected garbage; "
            "no framework allocator to measure what came back."
        )
    text = f"Freed {format_bytes(freed)}"
    if held is None:
        return text + "."
    if held == 0:
        return text + ": the allocator is back where it was before the cell."
    return (
        text + f"; the allocator still holds {format_bytes(held)} more than before the cell "
        "(variables of the notebook, or memory the framework keeps): a retry in this kernel may "
        "fail again, a kernel restart frees it all."
    )


def card_text(card: CardView) -> str:
    diagnosis = card.diagnosis
    lines = [f"ipy_gpuguard · {diagnosis.title} [{diagnosis.rule_id}]", diagnosis.summary]
    rows = facts_rows(diagnosis)
    width = max((len(label) for label, _ in rows), default=0)
    lines += [f"  {label:<{width}}  {value}" for label, value in rows]
    lines += [f"  · {line}" for line in diagnosis.evidence]
    if card.reclaimed is not None:
        lines.append(reclaimed_text(card.reclaimed))
    lines += list(card.notes)
    if card.retry is not None:
        lines += retry_render.offer_text(card.retry)
    if diagnosis.remedies:
        lines.append("What to do:")
    shown = diagnosis.remedies[:TEXT_REMEDIES]
    for number, remedy in enumerate(shown, 1):
        lines.append(f"  {number}. {remedy.title}: {remedy.why}")
        lines += [f"     - {step}" for step in remedy.steps]
        if remedy.note:
            lines.append(f"     ({remedy.note})")
    more = diagnosis.remedies[TEXT_REMEDIES:]
    if more:
        lines.append("  Also: " + "; ".join(remedy.title for remedy in more) + ".")
    return "\n".join(lines)


def card_header_html(card: CardView) -> str:
    """Title, sentence, facts, evidence and chart: the part of the card that is not buttons."""
    diagnosis = card.diagnosis
    colour = _KIND_COLOURS[diagnosis.kind]
    rows = "".join(
        f'<tr><td style="color:#666;padding-right:1em">{escape(label)}</td>'
        f"<td><code>{escape(value)}</code></td></tr>"
        for label, value in facts_rows(diagnosis)
    )
    evidence = "".join(f"<li>{escape(line)}</li>" for line in diagnosis.evidence)
    notes = "".join(f"<div>{escape(note)}</div>" for note in card.notes)
    return (
        f'<div style="border-left:4px solid {colour};padding-left:8px">'
        f'<div style="font-weight:bold;color:{colour}">{escape(diagnosis.title)} '
        f'<span style="font-weight:normal;color:#888;font-size:smaller">{escape(diagnosis.rule_id)}</span></div>'
        f"<div>{escape(diagnosis.summary)}</div>"
        f"{f'<table>{rows}</table>' if rows else ''}"
        f"{f'<ul>{evidence}</ul>' if evidence else ''}"
        f"{_chart_html(card)}{notes}</div>"
    )


def reclaimed_html(card: CardView) -> str:
    return "" if card.reclaimed is None else f"<div>{escape(reclaimed_text(card.reclaimed))}</div>"


def card_html(card: CardView) -> str:
    """The whole card as static HTML."""
    remedies = remedies_html(card.diagnosis.remedies)
    return (
        '<div class="ipy-gpuguard-card" style="font-size:13px">'
        f"{card_header_html(card)}{reclaimed_html(card)}"
        f"{retry_render.offer_html(card.retry) if card.retry is not None else ''}"
        f"{f'<div><b>What to do</b></div>{remedies}' if remedies else ''}</div>"
    )


def card_data(card: CardView) -> dict[str, Any]:
    """The card's data for machines (the lab extension): stable keys, bytes as integers."""
    diagnosis = card.diagnosis
    reclaimed = card.reclaimed
    return {
        "version": CARD_DATA_VERSION,
        "rule_id": diagnosis.rule_id,
        "kind": diagnosis.kind.value,
        "title": diagnosis.title,
        "summary": diagnosis.summary,
        "error_type": diagnosis.error_type,
        "matched": diagnosis.matched,
        "facts": {
            name: list(value) if isinstance(value, tuple) else value
            for name, value in diagnosis.facts.items()
        },
        "evidence": list(diagnosis.evidence),
        "remedies": [remedy_data(remedy) for remedy in diagnosis.remedies],
        "reclaimed": None
        if reclaimed is None
        else {
            "freed_bytes": reclaimed.freed_bytes,
            "held_bytes": reclaimed.held_bytes,
            "frames_cleared": reclaimed.frames_cleared,
        },
        "notes": list(card.notes),
        "retry": None if card.retry is None else _retry_data(card.retry),
    }


def _retry_data(offer: RetryOffer) -> dict[str, Any]:
    return {
        "batch_size": offer.size,
        "current_batch_size": offer.current,
        "where": offer.where,
        "reason": offer.reason,
        "choices": list(offer.choices),
    }


def _chart_html(card: CardView) -> str:
    panel = card.panel
    if panel is None:
        return ""
    return "".join(render.memory_chart_svg(panel, info) for info in panel.devices)
