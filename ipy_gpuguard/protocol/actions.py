"""Actions on a card, ``{action, card, args}``, and their results ``{ok, message, card?}``.

Widget buttons, ``%gpuguard retry`` and the lab extension (over the comm
``ipy_gpuguard.actions``) send the same actions; the kernel carries out the first three. The last
two are carried out by the frontend, from what the card says: the edit to write and the cell.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .card import Card
from .encode import SCHEMA_VERSION

RETRY = "retry"
FIND_MAX = "find_max"
FREE_MEMORY = "free_memory"
APPLY_TO_CELL = "apply_to_cell"
RESTART_AND_RUN_TO_HERE = "restart_and_run_to_here"
#: Every action id, in the order buttons show.
ACTIONS = (RETRY, FIND_MAX, FREE_MEMORY, APPLY_TO_CELL, RESTART_AND_RUN_TO_HERE)
#: Actions a frontend carries out itself (it edits the notebook, or restarts the kernel).
FRONTEND_ACTIONS = frozenset({APPLY_TO_CELL, RESTART_AND_RUN_TO_HERE})
#: The largest batch size an action may name (a framework's sizes are 32-bit integers).
MAX_BATCH_SIZE = 2**31 - 1
#: The longest id of a card, or of a request (a card's is 32 hexadecimal digits).
MAX_ID_LENGTH = 64


@dataclass(frozen=True)
class ActionArgs:
    """An action's arguments: the batch size of a retry (``None``: the card's offer)."""

    batch_size: int | None = None


@dataclass(frozen=True)
class Action:
    """An action on the card ``card``; ``request`` is the sender's id for it, which the result
    carries back (a frontend matches results to its requests by it, not by their order)."""

    action: str
    card: str
    args: ActionArgs = ActionArgs()
    request: str | None = None


@dataclass(frozen=True)
class ActionResult:
    """What came of an action: ``message`` is one sentence; ``card`` the card as it now is, and
    ``html`` and ``text`` its lasting forms, which a frontend saves with the card's data so that
    frontends without the lab extension show it too; ``request`` the action's own id."""

    action: str
    ok: bool
    message: str
    card: Card | None = None
    html: str | None = None
    text: str | None = None
    request: str | None = None
    version: int = SCHEMA_VERSION


@dataclass(frozen=True)
class LiveCards:
    """The kernel's message on the comm, when it opens and whenever the set changes: the ids
    of the cards that can still act, so that a frontend disables the buttons of the others
    (a card of an earlier kernel, or one older than the live ones) before they are clicked."""

    cards: tuple[str, ...]
    version: int = SCHEMA_VERSION


def parse_action(data: Any) -> Action:
    """An action from a frontend's JSON, as the schema's ``Action`` allows it; ``ValueError``
    says what is wrong, quoting at most a short excerpt of what was sent."""
    if not isinstance(data, Mapping):
        raise ValueError(
            f"an action is an object like {{'action': 'retry', 'card': ID}}, not {_excerpt(data)}"
        )
    extra = set(data) - {"action", "card", "args", "request"}
    if extra:
        names = ", ".join(_excerpt(name) for name in sorted(map(str, extra))[:3])
        raise ValueError(f"an action has action, card, args and request, not {names}")
    action, card, args = data.get("action"), data.get("card"), data.get("args", {})
    request = data.get("request")
    if request is not None and (not isinstance(request, str) or len(request) > MAX_ID_LENGTH):
        raise ValueError(f"{_excerpt(action)}: 'request' is the sender's id for it, a short text")
    if action not in ACTIONS:
        raise ValueError(f"unknown action {_excerpt(action)}: the actions are {', '.join(ACTIONS)}")
    if not isinstance(card, str) or not 0 < len(card) <= MAX_ID_LENGTH:
        raise ValueError(f"{action}: 'card' is the id of the card to act on, not {_excerpt(card)}")
    if not isinstance(args, Mapping) or set(args) - {"batch_size"}:
        raise ValueError(f"{action}: 'args' takes only batch_size, not {_excerpt(args)}")
    size = args.get("batch_size")
    if type(size) is float and size.is_integer():  # JSON's 32.0 is the schema's integer 32
        size = int(size)
    if size is not None and (type(size) is not int or not 1 <= size <= MAX_BATCH_SIZE):
        raise ValueError(
            f"{action}: batch_size is a whole number from 1 to {MAX_BATCH_SIZE}, not {_excerpt(size)}"
        )
    return Action(action, card, ActionArgs(size), request)


def _excerpt(value: Any, limit: int = 40) -> str:
    """``value`` as Python writes it, cut to ``limit`` characters: a refusal never echoes a
    payload back whole."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 1]}…"
