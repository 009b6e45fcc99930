"""Remedies as escaped HTML: shared by the remediation card and the doctor's report."""

from __future__ import annotations

from html import escape

from ..protocol import CardRemedy


def remedies_html(remedies: tuple[CardRemedy, ...]) -> str:
    """Each remedy folded: its title shows, a click opens why and the steps (no kernel needed)."""
    return "".join(_remedy_html(number, remedy) for number, remedy in enumerate(remedies, 1))


def _remedy_html(number: int, remedy: CardRemedy) -> str:
    steps = "".join(f"<li>{escape(step)}</li>" for step in remedy.steps)
    links = " · ".join(
        f'<a href="{escape(link.url)}" target="_blank" rel="noopener">{escape(link.label)}</a>'
        for link in remedy.links
    )
    note = f'<div style="color:#b26a00">{escape(remedy.note)}</div>' if remedy.note else ""
    return (
        f"<details><summary>{number}. {escape(remedy.title)}</summary>"
        f'<div style="margin-left:1.5em"><div>{escape(remedy.why)}</div>'
        f"{f'<ol>{steps}</ol>' if steps else ''}{note}{f'<div>{links}</div>' if links else ''}"
        "</div></details>"
    )
