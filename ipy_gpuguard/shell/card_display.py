"""Where a card is shown, and how it changes there: widgets, data for the lab extension, or text.

Every display shows the same :class:`~ipy_gpuguard.protocol.Card` under the card's id as its
display id, so that an action's result replaces the card where it is, whatever sent the action.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from IPython.display import DisplayHandle, display

from ..protocol import HIDDEN_CONTROLS, Action, Card
from ..retry import RunOutcome
from ..ui.card import CardControls, StaticCard
from .stream_record import recorded_streams

PREFIX = "ipy_gpuguard · "


class CardDisplay(Protocol):
    def show(self, card: Card, message: str = "") -> None:
        """The card as it now stands, after an action (``message`` says what came of it)."""

    def progress(self, card: Card, line: str) -> None:
        """The card while an action goes on; ``line`` says what just happened, if anything."""

    def around(self, run: Callable[[], RunOutcome]) -> RunOutcome:
        """Run an attempt of a retry where its output belongs."""

    def freeze(self, card: Card) -> None:
        """The card can no longer act: keep only its lasting form."""


class WidgetDisplay:
    """The card's lasting form with its buttons as widgets under it, for frontends without the
    lab extension (VS Code, Colab, Notebook 7, JupyterLab without it)."""

    def __init__(self, card: Card, send: Callable[[Action], object]) -> None:
        self._output: tuple[dict[str, str], ...] = ()  # what the last attempt printed
        self._card = _show(StaticCard(card), card.id)
        self.controls = CardControls(card, send)
        try:
            self._controls = _show(self.controls, f"{card.id}-controls")
        except BaseException:
            self.controls.close()  # shown nowhere: its widgets would live as long as the kernel
            raise

    def show(self, card: Card, message: str = "") -> None:
        self._card.update(StaticCard(card, self._output))
        self.controls.show(card, message)

    def progress(self, card: Card, line: str) -> None:
        self._card.update(StaticCard(card, self._output))
        self.controls.show(card, line)

    def around(self, run: Callable[[], RunOutcome]) -> RunOutcome:
        """Under the card's buttons, in place of the previous attempt's output; the card keeps
        a copy, which outlives the widget."""
        self.controls.output.clear_output()
        with self.controls.output, recorded_streams() as record:
            try:
                return run()
            finally:
                self._output = record.outputs()

    def freeze(self, card: Card) -> None:
        self._card.update(StaticCard(card, self._output))
        self._controls.update(HIDDEN_CONTROLS, raw=True)
        self.controls.close()


class DataDisplay:
    """The card as data (and text, HTML) for a frontend that renders it (the lab extension)."""

    def __init__(self, card: Card) -> None:
        self._handle = _show(StaticCard(card), card.id)

    def show(self, card: Card, message: str = "") -> None:
        self._handle.update(StaticCard(card))

    def progress(self, card: Card, line: str) -> None:
        self._handle.update(StaticCard(card))

    def around(self, run: Callable[[], RunOutcome]) -> RunOutcome:
        return run()

    def freeze(self, card: Card) -> None:
        """Nothing to release: the card is data already."""


class TextDisplay:
    """A terminal: the card once, then a line per attempt and what came of the action."""

    def __init__(self, card: Card) -> None:
        display(StaticCard(card))

    def show(self, card: Card, message: str = "") -> None:
        """``message``; when it is a retry's verdict, the verdict's lines under it."""
        words = card.words
        lines = [*words.verdict, *([words.edit] if words.edit else [])]
        if not lines or lines[0] != message:
            lines = [message] if message else []
        for number, line in enumerate(lines):
            print(f"{PREFIX}{line}" if number == 0 else f"  {line.strip()}")

    def progress(self, card: Card, line: str) -> None:
        if line:
            print(f"{PREFIX}{line}")

    def around(self, run: Callable[[], RunOutcome]) -> RunOutcome:
        return run()

    def freeze(self, card: Card) -> None:
        """Nothing to release: what was printed stays."""


def _show(obj: object, display_id: str) -> DisplayHandle:
    handle = display(obj, display_id=display_id)
    assert isinstance(handle, DisplayHandle)  # display returns one whenever given a display_id
    return handle
