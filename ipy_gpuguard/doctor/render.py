"""The doctor's report as text (a terminal), escaped HTML (a notebook) and data (``--json``).

Pure functions of a :class:`.Report`. Everything found on the machine is escaped in HTML: a
process name or a library path is text, never markup.
"""

from __future__ import annotations

import textwrap
from html import escape
from typing import Any

from .._version import __version__
from ..cards import card_remedy
from ..protocol import to_json
from ..ui.remedy_render import remedies_html
from .model import Check, Report, Status

#: The vendor MIME type of the report's data, for the lab extension.
DOCTOR_MIME = "application/vnd.ipy-gpuguard.doctor+json"
DOCTOR_DATA_VERSION = 1

SYMBOLS = {Status.OK: "✓", Status.WARNING: "!", Status.PROBLEM: "✗", Status.UNKNOWN: "?"}
COLOURS = {
    Status.OK: "#2e7d32",
    Status.WARNING: "#ef6c00",
    Status.PROBLEM: "#c62828",
    Status.UNKNOWN: "#616161",
}
#: ANSI colours for a terminal that shows them.
_ANSI = {Status.OK: "32", Status.WARNING: "33", Status.PROBLEM: "31", Status.UNKNOWN: "90"}
_STATUS_WIDTH = max(len(status.value) for status in Status) + 4


def summary_text(report: Report) -> str:
    """``GPU environment: 1 problem, 6 ok, 3 could not check (6.7 s)``."""
    counts = report.counts()
    order = (Status.PROBLEM, Status.WARNING, Status.OK, Status.UNKNOWN)
    parts = [_plural(counts[status], status) for status in order if counts[status]]
    return f"GPU environment: {', '.join(parts)} ({report.seconds:.1f} s)"


def _plural(count: int, status: Status) -> str:
    if status in (Status.PROBLEM, Status.WARNING) and count != 1:
        return f"{count} {status.value}s"
    return f"{count} {status.value}"


def report_text(report: Report, width: int = 100, colour: bool = False) -> str:
    """The report for a terminal: a line per check, then its details and remedies, wrapped."""
    lines = [summary_text(report), ""]
    shown: set[str] = set()
    for check in report.checks:
        lines += _check_lines(check, width, colour, shown)
    return "\n".join(lines)


def _check_lines(check: Check, width: int, colour: bool, shown: set[str]) -> list[str]:
    """The check's lines; a remedy already spelled out above (``shown``) is only named."""
    verdict = check.verdict
    label = f"{SYMBOLS[check.status]} {check.status.value}".ljust(_STATUS_WIDTH)
    if colour:
        label = f"\033[{_ANSI[check.status]}m{label}\033[0m"
    indent = " " * _STATUS_WIDTH
    found = _wrapped(f"{check.title}: {verdict.found}", width, indent, indent)
    lines = [label + found[0][_STATUS_WIDTH:], *found[1:]]
    for detail in verdict.details:
        lines += _wrapped(detail, width, indent + "  · ", indent + "    ")
    for remedy in verdict.remedies:
        if remedy.id in shown:
            lines += _wrapped(f"{remedy.title}: see above", width, indent + "→ ", indent + "  ")
            continue
        shown.add(remedy.id)
        lines += _wrapped(f"{remedy.title}: {remedy.why}", width, indent + "→ ", indent + "  ")
        for number, step in enumerate(remedy.steps, 1):
            lines += _wrapped(step, width, f"{indent}  {number}. ", indent + "     ")
        if remedy.note:
            lines += _wrapped(remedy.note, width, indent + "  ", indent + "  ")
        for title, url in remedy.links:
            lines += _wrapped(f"{title}: {url}", width, indent + "  ", indent + "    ")
    return lines


def _wrapped(text: str, width: int, first: str, rest: str) -> list[str]:
    """``text`` wrapped to ``width`` columns; paths and flags are never split at hyphens."""
    return textwrap.wrap(
        text,
        max(width, len(first) + 30),
        initial_indent=first,
        subsequent_indent=rest,
        break_on_hyphens=False,
        break_long_words=False,
    )


def status_html(status: Status) -> str:
    return (
        f'<span style="color:{COLOURS[status]};font-weight:600;white-space:nowrap">'
        f"{SYMBOLS[status]} {escape(status.value)}</span>"
    )


def rows_html(checks: tuple[Check, ...]) -> str:
    """The table's body: one row per check."""
    return "".join(_row_html(check) for check in checks)


def _row_html(check: Check) -> str:
    verdict = check.verdict
    details = "".join(f"<li>{escape(detail)}</li>" for detail in verdict.details)
    details_html = (
        f'<ul style="margin:2px 0;padding-left:1.2em;color:#555">{details}</ul>' if details else ""
    )
    cell = 'style="text-align:left;vertical-align:top;padding:4px 8px"'
    return (
        f'<tr data-check="{escape(check.id)}"><td {cell}>{status_html(check.status)}</td>'
        f"<td {cell}><b>{escape(check.title)}</b></td>"
        f"<td {cell}>{escape(verdict.found)}{details_html}</td>"
        f"<td {cell}>{remedies_html(tuple(map(card_remedy, verdict.remedies)))}</td></tr>"
    )


def table_html(checks: tuple[Check, ...]) -> str:
    head = "".join(
        f'<th style="text-align:left;padding:4px 8px">{title}</th>'
        for title in ("Status", "Check", "Found", "What to do")
    )
    return (
        '<table class="ipy-gpuguard-doctor" style="border-collapse:collapse;font-size:13px">'
        f"<thead><tr>{head}</tr></thead><tbody>{rows_html(checks)}</tbody></table>"
    )


def report_html(report: Report, attention_only: bool = False) -> str:
    """The report as static HTML: saved notebooks, nbconvert, frontends without widgets;
    ``attention_only`` shows only the checks that are not ok."""
    checks = report.checks
    if attention_only:
        checks = tuple(check for check in checks if check.status is not Status.OK)
    return f"<div><b>{escape(summary_text(report))}</b></div>{table_html(checks)}"


def report_data(report: Report) -> dict[str, Any]:
    """The report for machines: stable keys, one entry per check, in the order run."""
    return {
        "version": DOCTOR_DATA_VERSION,
        "ipy_gpuguard": __version__,
        "exit_status": report.exit_status,
        "seconds": round(report.seconds, 3),
        "counts": {status.value: count for status, count in report.counts().items()},
        "checks": [
            {
                "id": check.id,
                "title": check.title,
                "status": check.status.value,
                "found": check.verdict.found,
                "details": list(check.verdict.details),
                "remedies": [to_json(card_remedy(remedy)) for remedy in check.verdict.remedies],
            }
            for check in report.checks
        ],
    }
