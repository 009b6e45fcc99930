"""The live panel's mark in the metadata of its display.

A live panel is a widget that the kernel redraws; when the cell ends, the kernel replaces it
with its summary, and the mark goes with it. A kernel that dies or is restarted while the cell
runs cannot: its panel would stay "running" with its widgets gone ("Error displaying widget:
model not found" once the page is reloaded). A frontend that sees the kernel die or restart
replaces every output still marked live with the words the mark carries.
"""

from __future__ import annotations

from dataclasses import dataclass

from .encode import SCHEMA_VERSION

#: The metadata key of a live panel's display.
LIVE_PANEL_METADATA = "ipy_gpuguard_live_panel"


@dataclass(frozen=True)
class LivePanel:
    """What a frontend shows instead of a live panel whose kernel died, or was restarted
    (``restarted_text``; a mark saved before it had only ``stopped_text``)."""

    stopped_text: str
    restarted_text: str | None = None
    version: int = SCHEMA_VERSION
