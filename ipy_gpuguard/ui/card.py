"""The remediation card: the static card everywhere, and buttons where a kernel can serve them.

A button's click reaches the kernel only once the cell has returned (the shell channel is busy
until then), which is when the card appears: under the failed cell's traceback.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from html import escape
from typing import TYPE_CHECKING, Any

from . import card_render
from .card_render import CARD_MIME, CardView
from .remedy_render import remedies_html

if TYPE_CHECKING:
    from .retry_panel import RetryPanel

#: Button labels of the actions a card can perform; remedies without an action are guidance.
ACTION_LABELS = {
    "free_memory": "Free GPU memory",
    "retry_smaller_batch": "Retry with a smaller batch",
    "retry_mixed_precision": "Retry in mixed precision",
}


class StaticCard:
    """The card as text, HTML and JSON: terminals, saved notebooks, nbconvert."""

    def __init__(self, card: CardView) -> None:
        self.card = card

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        return static_bundle(self.card)


def static_bundle(card: CardView) -> dict[str, Any]:
    return {
        "text/plain": card_render.card_text(card),
        "text/html": card_render.card_html(card),
        CARD_MIME: card_render.card_data(card),
    }


class RemediationCard:
    """The card as widgets: the static card's content, with a button for each action.

    Parameters
    ----------
    actions
        What the guard can do now, by action id; each returns one sentence saying what it did.
        Remedies whose action is not here stay guidance.
    retry
        The retry buttons and attempts of an out-of-memory card; their buttons come first.
    """

    def __init__(
        self,
        card: CardView,
        actions: Mapping[str, Callable[[], str]],
        retry: RetryPanel | None = None,
    ) -> None:
        import ipywidgets as widgets  # ~70 ms to import: only when a card is shown

        self.card = card
        self._actions = actions
        self.header = widgets.HTML(card_render.card_header_html(card))
        self.status = widgets.HTML(card_render.reclaimed_html(card))
        self.buttons = [
            self._button(widgets, remedy.action)
            for remedy in card.diagnosis.remedies
            if remedy.action in actions
        ]
        self.retry = retry
        retry_buttons = retry.buttons if retry is not None else []
        retry_part = [retry.widget] if retry is not None else []
        self.guidance = widgets.HTML(remedies_html(card.diagnosis.remedies))
        self.widget = widgets.VBox(
            [
                self.header,
                widgets.HBox([*retry_buttons, *self.buttons]),
                self.status,
                *retry_part,
                self.guidance,
            ]
        )
        self.widget.add_class("ipy-gpuguard-card")

    def _button(self, widgets: Any, action: str | None) -> Any:
        assert action is not None
        button = widgets.Button(description=ACTION_LABELS.get(action, action))
        button.on_click(lambda _button: self.act(action))
        return button

    def act(self, action: str) -> str:
        """Run ``action`` and show its outcome; its failure is one line on the card."""
        self.status.value = f"<div>{escape(ACTION_LABELS.get(action, action))}…</div>"
        try:
            outcome = self._actions[action]()
        except Exception as error:  # the card must not raise into the comm handler
            outcome = f"{ACTION_LABELS.get(action, action)} failed: {type(error).__name__}: {error}"
        self.status.value = f"<div>{escape(outcome)}</div>"
        return outcome

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle: dict[str, Any] = self.widget._repr_mimebundle_(**kwargs)
        return {
            **static_bundle(self.card),
            **bundle,
            "text/plain": card_render.card_text(self.card),
        }
