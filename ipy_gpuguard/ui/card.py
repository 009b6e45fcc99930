"""The remediation card as widgets: the card's HTML, with a button for each action the kernel
carries out.

A button's click reaches the kernel only once the cell has returned (the shell channel is busy
until then), which is when the card appears: under the failed cell's traceback. A click sends
the card's action through ``send`` (the session's dispatcher), which updates this card with
:meth:`RemediationCard.show` as the action goes on; the card decides nothing itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..protocol import FRONTEND_ACTIONS, RETRY, Action, ActionArgs, ActionOffer, Card
from . import card_render, retry_render
from .remedy_render import remedies_html


class StaticCard:
    """The card as text, HTML and JSON: terminals, saved notebooks, nbconvert, the lab extension."""

    def __init__(self, card: Card) -> None:
        self.card = card

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        return card_render.card_bundle(self.card)


class RemediationCard:
    """The card as widgets; ``output`` receives what an attempt of a retry prints.

    Parameters
    ----------
    send
        Carries out an action (the session's dispatcher). A failure of its own is one line on
        the card, never a traceback in the comm handler.
    """

    def __init__(self, card: Card, send: Callable[[Action], object]) -> None:
        import ipywidgets as widgets  # ~70 ms to import: only when a card is shown

        self._widgets = widgets
        self._send = send
        self.card = card
        self.header = widgets.HTML()
        self.status = widgets.HTML()
        self.retry = widgets.HTML()
        self.output = widgets.Output()
        self.guidance = widgets.HTML(remedies_html(card.remedies))
        self.buttons: dict[str, Any] = {}
        self.button_row = widgets.HBox()
        self.widget = widgets.VBox(
            [self.header, self.button_row, self.status, self.retry, self.output, self.guidance]
        )
        self.widget.add_class("ipy-gpuguard-card")
        self.show(card)

    def show(self, card: Card, message: str = "") -> None:
        """Show ``card`` as it now stands, with the last action's ``message``."""
        self.card = card
        self.header.value = card_render.card_header_html(card)
        self.status.value = card_render.status_html(card, message)
        self.retry.value = (
            retry_render.retry_html(card.retry, card.batch_edit) if card.retry else ""
        )
        offers = [offer for offer in card.actions if offer.action not in FRONTEND_ACTIONS]
        self.button_row.children = [self._button(offer) for offer in offers]

    def click(self, action: str) -> None:
        """What a click on the button of ``action`` does."""
        offer = next((offer for offer in self.card.actions if offer.action == action), None)
        if offer is None or not offer.enabled:
            reason = offer.reason if offer is not None else "not offered on this card"
            self.status.value = card_render.status_html(self.card, f"{action}: {reason}")
            return
        try:
            self._send(Action(action, self.card.id, ActionArgs(offer.batch_size)))
        except Exception as error:  # the card must not raise into the comm handler
            self.status.value = card_render.status_html(
                self.card, f"{offer.label} failed: {type(error).__name__}: {error}"
            )

    def close(self) -> None:
        """Close every widget of the card, with their layouts and styles (a frozen card keeps
        its static form)."""
        from .panel import close_with_parts

        for widget in [*self.buttons.values(), *self.widget.children, self.widget]:
            close_with_parts(widget)

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
            button = self._widgets.Button(layout=self._widgets.Layout(width="auto"), **state)
            button.on_click(lambda _button, action=offer.action: self.click(action))
            self.buttons[offer.action] = button
        else:
            for name, value in state.items():
                setattr(button, name, value)
        return button

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle: dict[str, Any] = self.widget._repr_mimebundle_(**kwargs)
        return {
            **card_render.card_bundle(self.card),
            **bundle,
            "text/plain": card_render.card_text(self.card),
        }
