"""Remedies as escaped HTML and as data: shared by the remediation card and the doctor's report."""

from __future__ import annotations

from html import escape
from typing import Any

from ..diagnosis import Remedy


def remedies_html(remedies: tuple[Remedy, ...]) -> str:
    """Each remedy folded: its title shows, a click opens why and the steps (no kernel needed)."""
    return "".join(_remedy_html(number, remedy) for number, remedy in enumerate(remedies, 1))


def remedy_data(remedy: Remedy) -> dict[str, Any]:
    """A remedy for machines (the lab extension, ``--json``): stable keys."""
    return {
        "id": remedy.id,
        "title": remedy.title,
        "why": remedy.why,
        "steps": list(remedy.steps),
        "action": remedy.action,
        "note": remedy.note,
        "links": [{"label": label, "url": url} for label, url in remedy.links],
    }


def _remedy_html(number: int, remedy: Remedy) -> str:
    steps = "".join(f"<li>{escape(step)}</li>" for step in remedy.steps)
    links = " · ".join(
        f'<a href="{escape(url)}" target="_blank" rel="noopener">{escape(label)}</a>'
        for label, url in remedy.links
    )
    note = f'<div style="color:#b26a00">{escape(remedy.note)}</div>' if remedy.note else ""
    return (
        f"<details><summary>{number}. {escape(remedy.title)}</summary>"
        f'<div style="margin-left:1.5em"><div>{escape(remedy.why)}</div>'
        f"{f'<ol>{steps}</ol>' if steps else ''}{note}{f'<div>{links}</div>' if links else ''}"
        "</div></details>"
    )
