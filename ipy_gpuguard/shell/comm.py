"""The comm ``ipy_gpuguard.actions``: how a frontend that renders cards itself (the lab
extension) says so, and sends the actions of its buttons.

The kernel opens the comm when the guard is loaded; a frontend that renders cards (the lab
extension registers the target) answers ``{"renders": ["card"]}``, and one that does not closes
it. A frontend may also open the comm itself with that handshake as its data (the lab extension
does when it sees a card of a kernel it has no comm with). From the handshake on, cards are
displayed as data (card JSON, HTML, text) without widgets, and a stall is shown as a card while
the cell runs. The kernel answers the handshake, and every later change, with the live cards
``{cards: [ids]}``. Every other message from the frontend is an action ``{action, card, args}``;
the answer is its result ``{ok, message, card, html, text, request}``, sent on the same comm
with the request's id, while the card's display is updated by its display id.

A handshake may also ask for the kernel's reports (``{"reports": ["state"]}``): the comm then
carries the kernel's state record (:class:`~ipy_gpuguard.protocol.StateReport`) at once, with
every write of the state file (pushed from the sampler's thread: a kernel busy with a guarded
cell cannot answer a request on its shell channel, but its iopub channel carries what it sends),
and in answer to ``{"ask": "state"}`` when idle. The kernel's channels are the one path every
gateway carries, so a frontend learns the kernel's GPU and last words wherever the kernel runs.
A kernel sends no report to a frontend that did not ask. (Not ipykernel's control channel: its
handlers are a fixed set of the protocol's requests, and a push needs no request.)
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..protocol import ActionResult, KernelState, LiveCards, StateReport, parse_action, to_json

if TYPE_CHECKING:
    from .session import GuardSession

TARGET = "ipy_gpuguard.actions"


class ActionsComm:
    """The comm target of the extension; counts the open comms whose frontend renders cards.

    It is registered as the extension loads, before any session is open: ``session`` opens it
    when an action comes, and :meth:`attach` connects a session once one has opened.
    """

    def __init__(
        self,
        session: Callable[[], GuardSession],
        state: Callable[[], KernelState | None] = lambda: None,
    ) -> None:
        self._session = session
        self._state = state
        self._attached: GuardSession | None = None
        self._renderers: set[str] = set()
        #: The comms whose frontend asked for the kernel's reports.
        self._reporting: set[str] = set()
        self._comms: dict[str, Any] = {}

    def attach(self, session: GuardSession) -> None:
        """The session has opened: it announces its cards here and learns who renders them."""
        self._attached = session
        session.cards.changed = self.announce
        self._update()

    def offer(self) -> None:
        """Open the comm from the kernel, as the guard loads: a frontend that renders cards
        answers with the handshake before the first guarded cell, where one can."""
        from comm import create_comm

        self._listen(create_comm(target_name=TARGET, data={}))

    def opened(self, comm: Any, message: dict[str, Any]) -> None:
        """A frontend opened the comm; its data is the handshake."""
        self._listen(comm)
        self._handshake(comm, message.get("content", {}).get("data"))

    def _listen(self, comm: Any) -> None:
        self._comms[comm.comm_id] = comm
        comm.on_msg(lambda msg: self.received(comm, msg))
        comm.on_close(lambda _msg: self.closed(comm))

    def _handshake(self, comm: Any, data: Any) -> None:
        """What the frontend renders, and whether it wants the kernel's reports; answered with
        the live cards, then the state record where it asked for it."""
        renders = data.get("renders") if isinstance(data, dict) else None
        if isinstance(renders, list) and "card" in renders:
            self._renderers.add(comm.comm_id)
        self._update()
        session = self._attached
        comm.send(to_json(LiveCards(session.cards.ids() if session is not None else ())))
        reports = data.get("reports") if isinstance(data, dict) else None
        if isinstance(reports, list) and "state" in reports:
            self._reporting.add(comm.comm_id)
            self._send_state(comm, self._state())

    def closed(self, comm: Any) -> None:
        self._renderers.discard(comm.comm_id)
        self._reporting.discard(comm.comm_id)
        self._comms.pop(comm.comm_id, None)
        self._update()

    def report(self, state: KernelState) -> None:
        """Send the state record to every frontend that asked for it; from the sampler's
        thread while a cell runs. A comm that cannot send (its kernel shutting down) is
        skipped: a report is never worth an error."""
        for comm_id in list(self._reporting):
            comm = self._comms.get(comm_id)
            if comm is not None:
                self._send_state(comm, state)

    @staticmethod
    def _send_state(comm: Any, state: KernelState | None) -> None:
        if state is None:
            return
        try:
            comm.send(to_json(StateReport(state)))
        except Exception as error:  # the guard's own: said once on stderr, never raised
            print(f"ipy_gpuguard: the kernel's report was not sent ({error})", file=sys.stderr)

    def announce(self, cards: tuple[str, ...]) -> None:
        """Tell every open comm which cards can act now."""
        message = to_json(LiveCards(cards))
        for comm in list(self._comms.values()):
            comm.send(message)

    def received(self, comm: Any, message: dict[str, Any]) -> None:
        """Carry out an action and answer with its result; a bad one gets a result saying why.
        A handshake on a comm the kernel opened is answered as such."""
        data = message.get("content", {}).get("data")
        if isinstance(data, dict) and "renders" in data:
            self._handshake(comm, data)
            return
        if isinstance(data, dict) and data.get("ask") == "state":
            self._send_state(comm, self._state())
            return
        name = str(data.get("action")) if isinstance(data, dict) else ""
        request = data.get("request") if isinstance(data, dict) else None
        try:
            result = self._session().act(parse_action(data))
        except ValueError as error:
            result = ActionResult(name, False, str(error))
        except Exception as error:  # the comm handler must not print a traceback of the guard's
            result = ActionResult(
                name, False, f"the guard failed ({type(error).__name__}: {error})"
            )
        from ..ui.card_render import card_html, card_text  # imported with the first action

        card = result.card
        comm.send(
            to_json(
                replace(
                    result,
                    html=card_html(card) if card is not None else None,
                    text=card_text(card) if card is not None else None,
                    request=request if isinstance(request, str) else None,
                )
            )
        )

    def close(self) -> None:
        """The guard is unloaded: close every comm (the frontend forgets its live cards)."""
        for comm in list(self._comms.values()):
            comm.close()
        self._comms.clear()
        self._renderers.clear()
        self._reporting.clear()
        self._update()

    def _update(self) -> None:
        if self._attached is not None:
            self._attached.frontend_renders_cards = bool(self._renderers)
