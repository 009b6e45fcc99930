"""What the person sees: pure text/HTML renderers of the protocol's data and of the panel, and
the card's buttons as thin ipywidgets wrappers (imported by the shell only when a kernel shows
them)."""

from .card import CardControls, StaticCard
from .card_render import card_bundle, card_html, card_text
from .render import summary_html, summary_text

__all__ = [
    "CardControls",
    "StaticCard",
    "card_bundle",
    "card_html",
    "card_text",
    "summary_html",
    "summary_text",
]
