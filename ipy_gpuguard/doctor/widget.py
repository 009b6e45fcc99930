"""The report in a notebook: a table of widgets, a filter, and a button that checks again.

"Check again" is served once the cell that showed the report has returned, as every widget
click is: after changing a setting (``%env TF_FORCE_GPU_ALLOW_GROWTH=true``) the person sees
the new verdict without running the cell again.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import Any

from .model import Report, Status
from .render import DOCTOR_MIME, report_data, report_html, report_text, summary_text, table_html

Announce = Callable[[str], None]


class DoctorTable:
    """The report as widgets, with the static renderings for frontends without them.

    Parameters
    ----------
    check_again
        Runs the checks anew, telling what takes time to the announce function it is given.
    """

    def __init__(self, report: Report, check_again: Callable[[Announce], Report]) -> None:
        import ipywidgets as widgets  # ~70 ms to import: only when a report is shown

        self.report = report
        self._check_again = check_again
        self.summary = widgets.HTML()
        self.filter = widgets.ToggleButtons(
            options=[("All checks", "all"), ("Needs attention", "attention")], value="all"
        )
        self.button = widgets.Button(description="Check again", icon="refresh")
        self.table = widgets.HTML()
        self.widget = widgets.VBox(
            [widgets.HBox([self.summary, self.filter, self.button]), self.table]
        )
        self.widget.add_class("ipy-gpuguard-doctor")
        self.filter.observe(lambda change: self._show(), names="value")
        self.button.on_click(lambda button: self.check_again())
        self._show()

    def check_again(self) -> Report:
        """Run every check again and show the new report."""
        self.button.disabled = True
        try:
            self.report = self._check_again(self._announce)
        finally:
            self.button.disabled = False
        self._show()
        return self.report

    def _announce(self, message: str) -> None:
        self.summary.value = f"<i>{escape(message)}</i>"

    def _show(self) -> None:
        checks = self.report.checks
        if self.filter.value == "attention":
            checks = tuple(check for check in checks if check.status is not Status.OK)
        self.summary.value = f"<b>{escape(summary_text(self.report))}</b>"
        self.table.value = table_html(checks)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle: dict[str, Any] = self.widget._repr_mimebundle_(**kwargs)
        return {
            "text/html": report_html(self.report),
            DOCTOR_MIME: report_data(self.report),
            **bundle,
            "text/plain": report_text(self.report),
        }
