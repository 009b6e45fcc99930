"""The comm ``ipy_gpuguard.actions``: how a frontend that renders cards itself (the lab
extension) says so, and sends the actions of its buttons.

The frontend opens the comm with ``{"renders": ["card"]}`` once it has seen a card of this
kernel: from then on cards are displayed as data (card JSON, HTML, text) without widgets. The
kernel answers the opening, and every later change, with the live cards ``{cards: [ids]}``. Each
message from the frontend is an action ``{action, card, args}``; the answer is its result
``{ok, message, card?}``, sent on the same comm, while the card's display is updated by its
display id.
"""

from __future__ import annotations

from typing import Any

from ..protocol import ActionResult, LiveCards, parse_action, to_json
from .session import GuardSession

TARGET = "ipy_gpuguard.actions"


class ActionsComm:
    """The comm target of one session; counts the open comms whose frontend renders cards."""

    def __init__(self, session: GuardSession) -> None:
        self.session = session
        self._renderers: set[str] = set()
        self._comms: dict[str, Any] = {}
        session.cards.changed = self.announce

    def opened(self, comm: Any, message: dict[str, Any]) -> None:
        """A frontend opened the comm; the handshake says what it renders."""
        data = message.get("content", {}).get("data") or {}
        renders = data.get("renders") if isinstance(data, dict) else None
        if isinstance(renders, list) and "card" in renders:
            self._renderers.add(comm.comm_id)
        self._comms[comm.comm_id] = comm
        self._update()
        comm.on_msg(lambda msg: self.received(comm, msg))
        comm.on_close(lambda _msg: self.closed(comm))
        comm.send(to_json(LiveCards(self.session.cards.ids())))

    def closed(self, comm: Any) -> None:
        self._renderers.discard(comm.comm_id)
        self._comms.pop(comm.comm_id, None)
        self._update()

    def announce(self, cards: tuple[str, ...]) -> None:
        """Tell every open comm which cards can act now."""
        message = to_json(LiveCards(cards))
        for comm in list(self._comms.values()):
            comm.send(message)

    def received(self, comm: Any, message: dict[str, Any]) -> None:
        """Carry out an action and answer with its result; a bad one gets a result saying why."""
        data = message.get("content", {}).get("data")
        name = str(data.get("action")) if isinstance(data, dict) else ""
        try:
            result = self.session.act(parse_action(data))
        except ValueError as error:
            result = ActionResult(name, False, str(error))
        except Exception as error:  # the comm handler must not print a traceback of the guard's
            result = ActionResult(
                name, False, f"the guard failed ({type(error).__name__}: {error})"
            )
        comm.send(to_json(result))

    def _update(self) -> None:
        self.session.frontend_renders_cards = bool(self._renderers)
