"""The frozen panel, as static HTML and text: what a saved notebook and a terminal keep."""

from __future__ import annotations

from typing import Any

from ..record import PanelView
from . import render


class PanelSummary:
    """The frozen panel: static HTML and text, so a saved notebook or a terminal still shows it."""

    def __init__(self, view: PanelView) -> None:
        self.view = view

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, str]:
        return {
            "text/plain": render.summary_text(self.view),
            "text/html": render.summary_html(self.view),
        }
