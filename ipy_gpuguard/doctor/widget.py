"""The report in a notebook: a static display that lasts, and under it a filter and a button
that checks again, as widgets.

The report is a display of its own (text, HTML and its data): what a saved notebook, nbconvert
and a frontend without widgets show. A widget view is preferred over the HTML beside it
wherever widgets render (nbconvert too, once the notebook saved the widgets' state), so a
report that was one widget display vanished offline. The controls redraw the report's display.

"Check again" is served once the cell that showed the report has returned, as every widget
click is: after changing a setting (``%env TF_FORCE_GPU_ALLOW_GROWTH=true``) the person sees
the new verdict without running the cell again.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import Any

from .model import Report
from .render import DOCTOR_MIME, report_data, report_html, report_text

Announce = Callable[[str], None]


class DoctorReport:
    """The report as text, HTML and data; ``attention_only`` leaves out the checks that are ok
    from the HTML (the data and the text keep every check)."""

    def __init__(self, report: Report, attention_only: bool = False) -> None:
        self.report = report
        self.attention_only = attention_only

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        return {
            "text/plain": report_text(self.report),
            "text/html": report_html(self.report, self.attention_only),
            DOCTOR_MIME: report_data(self.report),
        }


class DoctorControls:
    """The filter and "Check again", under the report; each change redraws it through ``show``.

    Parameters
    ----------
    check_again
        Runs the checks anew, telling what takes time to the announce function it is given.
    show
        Redraws the report's display.
    """

    def __init__(
        self,
        report: Report,
        check_again: Callable[[Announce], Report],
        show: Callable[[DoctorReport], None],
    ) -> None:
        import ipywidgets as widgets  # ~70 ms to import: only when a report is shown

        self.report = report
        self._check_again = check_again
        self._show_report = show
        self.status = widgets.HTML()
        self.filter = widgets.ToggleButtons(
            options=[("All checks", "all"), ("Needs attention", "attention")], value="all"
        )
        self.button = widgets.Button(description="Check again", icon="refresh")
        self.widget = widgets.HBox([self.filter, self.button, self.status])
        self.widget.add_class("ipy-gpuguard-doctor")
        self.filter.observe(lambda change: self._show(), names="value")
        self.button.on_click(lambda button: self.check_again())

    def check_again(self) -> Report:
        """Run every check again and show the new report."""
        self.button.disabled = True
        try:
            self.report = self._check_again(self._announce)
        finally:
            self.button.disabled = False
            self.status.value = ""
        self._show()
        return self.report

    def _announce(self, message: str) -> None:
        self.status.value = f"<i>{escape(message)}</i>"

    def _show(self) -> None:
        self._show_report(DoctorReport(self.report, self.filter.value == "attention"))

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        """The widget view alone: the report above holds every word."""
        bundle: dict[str, Any] = self.widget._repr_mimebundle_(**kwargs)
        return {**bundle, "text/plain": ""}
