"""The widgets one view makes, closed together.

ipywidgets keeps every widget alive in the kernel until it is closed, and a widget's ``close``
leaves its ``layout`` and ``style`` open. A view (the live panel, a card's buttons) makes its
widgets through :class:`OwnedWidgets`, so that its end closes all of them, and so does a failure
halfway through making them: a constructor or a display that raises leaves nothing behind.
Imports no ipywidgets itself: a card's buttons import it only when a card is shown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

W = TypeVar("W")


class OwnedWidgets:
    """Widgets made for one view, in the order they were made."""

    def __init__(self) -> None:
        self._made: list[Any] = []

    def make(self, factory: Callable[..., W], *args: Any, **kwargs: Any) -> W:
        """``factory(*args, **kwargs)``, kept to be closed with the rest."""
        widget = factory(*args, **kwargs)
        self._made.append(widget)
        return widget

    def close(self) -> None:
        """Close every widget made, containers first, with their layouts and styles."""
        made, self._made = self._made, []
        for widget in reversed(made):
            close_with_parts(widget)

    @contextmanager
    def closed_on_failure(self) -> Iterator[OwnedWidgets]:
        """Close what was made when the block fails, and let its error go on."""
        try:
            yield self
        except BaseException:
            self.close()
            raise


def close_with_parts(widget: Any) -> None:
    """Close a widget, and its ``layout`` and ``style`` widgets, which its ``close`` leaves open."""
    for part in (getattr(widget, "layout", None), getattr(widget, "style", None)):
        close = getattr(part, "close", None)
        if callable(close):
            close()
    widget.close()
