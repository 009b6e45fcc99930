"""``%gpuguard history``: the recent incidents as a table, in text and escaped HTML."""

from __future__ import annotations

from html import escape
from typing import Any

_COLUMNS = (("time", "time"), ("rule_id", "rule"), ("title", "what"), ("outcome", "outcome"))


class HistoryTable:
    """Incidents read back from the log (plain dicts: older lines may lack newer keys)."""

    def __init__(self, incidents: list[dict[str, Any]], source: str) -> None:
        self.incidents = incidents
        self.source = source

    def rows(self) -> list[list[str]]:
        return [[str(incident.get(key, "")) for key, _ in _COLUMNS] for incident in self.incidents]

    def text(self) -> str:
        if not self.incidents:
            return f"no incidents recorded yet ({self.source})"
        table = [[title for _, title in _COLUMNS], *self.rows()]
        widths = [max(len(row[column]) for row in table) for column in range(len(_COLUMNS))]
        lines = [
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
            for row in table
        ]
        return "\n".join([*lines, f"({len(self.incidents)} incidents from {self.source})"])

    def html(self) -> str:
        if not self.incidents:
            return f"<div>{escape(self.text())}</div>"
        head = "".join(f"<th>{escape(title)}</th>" for _, title in _COLUMNS)
        body = "".join(
            "<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>"
            for row in self.rows()
        )
        return (
            f'<table class="ipy-gpuguard-history"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table><div>{escape(self.source)}</div>"
        )

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, str]:
        return {"text/plain": self.text(), "text/html": self.html()}
