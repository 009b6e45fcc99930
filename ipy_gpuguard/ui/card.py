"""The remediation card in a notebook: its lasting form, and its buttons as widgets beside it.

The card itself is :class:`StaticCard`, a display of text, escaped HTML and the card's JSON:
what a saved notebook, nbconvert, GitHub and a frontend without widgets show, whether or not a
kernel is attached. Its buttons are a separate display, :class:`CardControls`, under it: a
widget view is preferred over the HTML beside it by every frontend that renders widgets (and by
nbconvert wherever the notebook saved the widgets' state), so a card that was one widget
display vanished offline, or became "model not found" after a restart. Once the card can no
longer act, its controls are hidden and the card stays.

A button's click reaches the kernel only once the cell has returned (the shell channel is busy
until then), which is when the card appears: under the failed cell's traceback. A click sends
the card's action through ``send`` (the session's dispatcher), which updates the card and these
controls as the action goes on; the controls decide nothing themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import Any

from ..protocol import (
    CARD_MIME,
    CONTROLS_MIME,
    FRONTEND_ACTIONS,
    RETRY,
    Action,
    ActionArgs,
    ActionOffer,
    Card,
)
from . import card_render, output_render
from .owned import OwnedWidgets


class StaticCard:
    """The card as text, HTML and JSON: terminals, saved notebooks, nbconvert, the lab extension.

    ``output`` is what the card's last retry printed (stream outputs), kept under the card: its
    widget under the buttons is gone once the kernel is.
    """

    def __init__(self, card: Card, output: tuple[dict[str, str], ...] = ()) -> None:
        self.card = card
        self.output = output

    def _repr_mimebundle_(
        self, **kwargs: Any
    ) -> dict[str, Any] | tuple[dict[str, Any], dict[str, Any]]:
        bundle = card_render.card_bundle(self.card)
        if not self.output:
            return bundle
        bundle["text/html"] += output_render.output_html(self.output)
        bundle["text/plain"] += "\n\n" + output_render.output_text(self.output)
        return bundle, output_render.output_metadata(CARD_MIME, self.output)


class CardControls:
    """The card's buttons, a line saying what the last action did, and ``output``, which
    receives what an attempt of a retry prints.

    Parameters
    ----------
    send
        Carries out an action (the session's dispatcher). A failure of its own is one line
        under the buttons, never a traceback in the comm handler.
    """

    def __init__(self, card: Card, send: Callable[[Action], object]) -> None:
        import ipywidgets as widgets  # ~70 ms to import: only when a card is shown

        self._widgets = widgets
        self._send = send
        self.card = card
        self.buttons: dict[str, Any] = {}
        self._owned = OwnedWidgets()
        with self._owned.closed_on_failure() as owned:
            self.status = owned.make(widgets.HTML)
            self.output = owned.make(widgets.Output)
            self.button_row = owned.make(widgets.HBox)
            self.widget = owned.make(widgets.VBox, [self.button_row, self.status, self.output])
            self.widget.add_class("ipy-gpuguard-card-controls")
            self.show(card)

    def show(self, card: Card, message: str = "") -> None:
        """The buttons of ``card`` as it now stands, and the last action's ``message`` unless
        the card already says it (a verdict, what freeing gave back)."""
        self.card = card
        said = message and message not in card_render.card_text(card)
        self.status.value = f"<div>{escape(message)}</div>" if said else ""
        offers = [offer for offer in card.actions if offer.action not in FRONTEND_ACTIONS]
        self.button_row.children = [self._button(offer) for offer in offers]

    def click(self, action: str) -> None:
        """What a click on the button of ``action`` does."""
        offer = next((offer for offer in self.card.actions if offer.action == action), None)
        if offer is None or not offer.enabled:
            reason = offer.reason if offer is not None else "not offered on this card"
            self.status.value = f"<div>{escape(f'{action}: {reason}')}</div>"
            return
        try:
            self._send(Action(action, self.card.id, ActionArgs(offer.batch_size)))
        except Exception as error:  # the card must not raise into the comm handler
            line = f"{offer.label} failed: {type(error).__name__}: {error}"
            self.status.value = f"<div>{escape(line)}</div>"

    def close(self) -> None:
        """Close every widget of the controls, with their layouts and styles."""
        self._owned.close()

    def _button(self, offer: ActionOffer) -> Any:
        """The button of ``offer``: made once per action, then kept up to date."""
        state = {
            "description": offer.label,
            "disabled": not offer.enabled,
            "tooltip": offer.reason or offer.label,
            "button_style": "primary" if offer.action == RETRY and offer.enabled else "",
        }
        button = self.buttons.get(offer.action)
        if button is None:
            # A label is never cut: the button is as wide as its text.
            layout = self._owned.make(self._widgets.Layout, width="auto")
            button = self._owned.make(self._widgets.Button, layout=layout, **state)
            button.on_click(lambda _button, action=offer.action: self.click(action))
            self.buttons[offer.action] = button
        else:
            for name, value in state.items():
                setattr(button, name, value)
        return button

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        """The widget view, and the mark that lets the lab extension show nothing instead:
        its card has buttons of its own (a cell that ran before the extension's handshake
        gets these controls, and showed two of each). The card above holds every word (a text
        rendering of the buttons would repeat its labels in a saved notebook)."""
        bundle: dict[str, Any] = self.widget._repr_mimebundle_(**kwargs)
        return {**bundle, CONTROLS_MIME: {"card": self.card.id}, "text/plain": ""}
