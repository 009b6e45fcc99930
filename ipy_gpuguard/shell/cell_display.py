"""A display the guard's threads keep up to date while a cell runs, out of the person's capture.

The sampler and the watchdog redraw the live panel and a stall's card from their own threads.
``IPython.display.display`` publishes through the shell's publisher of the moment, which a
``%%capture`` in the cell swaps for one that keeps every output in the person's variable: the
panel's redraws (four a second) piled up there, and a stall's card never reached the page. A
:class:`CellDisplay` publishes through the publisher the shell had when the guard made it, as
the cell began: the page's.
"""

from __future__ import annotations

from typing import Any

from IPython.core.formatters import format_display_data
from IPython.core.interactiveshell import InteractiveShell


def page_publisher() -> Any:
    """The shell's display publisher now: take it as the cell begins, before its code runs."""
    return InteractiveShell.instance().display_pub


class CellDisplay:
    """One display of the running cell, by its id, published through ``publisher`` (the
    page's, from :func:`page_publisher`): shown once, then replaced in place."""

    def __init__(self, display_id: str, publisher: Any) -> None:
        self.display_id = display_id
        self._publisher = publisher
        self._shown = False

    def show(self, obj: object) -> None:
        """``obj`` as the display's first drawing, or in place of the last."""
        data, metadata = format_display_data(obj)
        self.show_raw(data, metadata)

    def show_raw(self, data: dict[str, object], metadata: dict[str, object] | None = None) -> None:
        self._publisher.publish(
            data=data,
            metadata=metadata or {},
            transient={"display_id": self.display_id},
            update=self._shown,
        )
        self._shown = True
