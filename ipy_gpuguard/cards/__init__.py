"""The card as data, pure: built from the diagnosis, the finished run's record, the retry's
state and what freeing gave back. Every action offer and its reason, every refusal, and every
sentence a renderer shows are decided here; ``ui/``, the shell's displays and the lab extension
only render the :class:`~ipy_gpuguard.protocol.Card` this room builds.

Imports neither IPython nor widgets nor a framework.
"""

from .build import (
    PENDING,
    CardParts,
    base_card,
    card_remedy,
    facts_of,
    hang_card,
    reclaim_of,
    search_card,
    with_parts,
    words_of,
)
from .words import attempt_text, reclaim_text, verdict_lines

__all__ = [
    "PENDING",
    "CardParts",
    "attempt_text",
    "base_card",
    "card_remedy",
    "facts_of",
    "hang_card",
    "reclaim_of",
    "reclaim_text",
    "search_card",
    "verdict_lines",
    "with_parts",
    "words_of",
]
