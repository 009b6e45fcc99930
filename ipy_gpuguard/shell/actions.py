"""One dispatcher for every action on a card, whoever sends it.

A widget button, ``%gpuguard retry`` and the lab extension (over the comm
``ipy_gpuguard.actions``) send the same :class:`~ipy_gpuguard.protocol.Action`; the
:class:`CardActions` of the session carries it out on the :class:`LiveCard` it names and answers
with an :class:`~ipy_gpuguard.protocol.ActionResult`. Only the last :data:`MAX_LIVE_CARDS`
cards can act; older ones keep their lasting form and release their widgets.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace

from ..cards import CardParts, attempt_text, reclaim_of, reclaim_text, with_parts
from ..cards.offers import REQUEST_RUNNING, applied_text, refusal, request_reused
from ..cards.retry_words import attempt_record
from ..protocol import (
    APPLY_TO_CELL,
    FIND_MAX,
    FREE_MEMORY,
    FRONTEND_ACTIONS,
    RETRY,
    Action,
    ActionResult,
    Card,
)
from ..record import Reclaimed
from ..retry import FIND_MAX_RUNS, Attempt, RunOutcome
from .card_display import CardDisplay

#: Cards that keep their buttons; older ones become static (their widgets are closed).
MAX_LIVE_CARDS = 20
#: The last requests remembered by id, so that one sent again is answered, not carried out again.
MAX_ANSWERED_REQUESTS = 256

AroundRun = Callable[[Callable[[], RunOutcome]], RunOutcome]


@dataclass
class LiveCard:
    """A card that can still act: its fixed part, its changing part, where it is shown."""

    base: Card
    parts: CardParts
    display: CardDisplay
    free_memory: Callable[[], Reclaimed] | None = None
    #: Its failure is an incident of the log, which a later fix from the card updates.
    in_the_log: bool = False

    @property
    def card(self) -> Card:
        return with_parts(self.base, self.parts)

    def free(self) -> str:
        """Free what the failure pinned; returns what came back, in a sentence."""
        assert self.free_memory is not None
        return self.freed(self.free_memory())

    def freed(self, reclaimed: Reclaimed) -> str:
        """Record what freeing gave back (the card shows it next); returns it in a sentence."""
        reclaim = reclaim_of(reclaimed)
        self.parts = replace(self.parts, reclaimed=reclaim)
        return reclaim_text(reclaim)

    def retry(
        self, size: int | None, runs: int, find_max: bool, around: AroundRun | None
    ) -> Attempt | None:
        """Attempt once at ``size``, or (``size`` ``None``) by itself up to ``runs`` times, a
        search for the largest size that fits with ``find_max``; the card shows each attempt.

        The failure's memory is freed first if it was not yet: its traceback pins its tensors.
        """
        request = self.parts.request
        assert request is not None
        assert request.retry is not None
        retry = request.retry
        reclaimed = self.parts.reclaimed
        if (reclaimed is None or reclaimed.pending) and self.free_memory is not None:
            self.free()
        self.parts = replace(self.parts, running=True)
        self.display.progress(self.card, "")  # the buttons say a retry is running
        run_around = around or self.display.around

        def report(attempt: Attempt) -> None:
            self.display.progress(
                self.card,
                f"retry: {attempt_text(attempt_record(attempt), retry.setup.capacity_bytes)}",
            )

        try:
            if size is not None:
                last: Attempt | None = retry.attempt(size, run_around)
                report(retry.attempts[-1])
            else:
                last = retry.auto(runs, find_max, report, run_around)
        finally:
            self.parts = replace(self.parts, running=False)
            retry.forget_the_fit()
        final = retry.attempts[-1] if retry.attempts else None
        if final is not None and final.outcome.reclaimed is not None:
            # The reclaim line says what the verdict says: the last freeing, against the
            # allocator's bytes before the cell.
            freed = replace(final.outcome.reclaimed, held_bytes=retry.held_bytes(final))
            self.parts = replace(self.parts, reclaimed=freed)
        return last

    def verdict_message(self) -> str:
        verdict = self.card.words.verdict
        return verdict[0] if verdict else ""


class CardActions:
    """The live cards by id, and the dispatcher of the actions on them.

    ``changed`` hears the ids of the live cards whenever a card comes or goes (the comm tells
    the lab extension, which disables the buttons of the others).
    """

    def __init__(self) -> None:
        self._cards: OrderedDict[str, LiveCard] = OrderedDict()
        self._answered: OrderedDict[str, tuple[Action, ActionResult]] = OrderedDict()
        self.changed: Callable[[tuple[str, ...]], None] | None = None

    def add(self, live: LiveCard) -> None:
        self._cards[live.base.id] = live
        while len(self._cards) > MAX_LIVE_CARDS:
            _, oldest = self._cards.popitem(last=False)
            oldest.display.freeze(oldest.card)
        self._announce()

    def ids(self) -> tuple[str, ...]:
        return tuple(self._cards)

    def _announce(self) -> None:
        if self.changed is not None:
            self.changed(self.ids())

    def get(self, card_id: str) -> LiveCard | None:
        return self._cards.get(card_id)

    def __len__(self) -> int:
        return len(self._cards)

    def act(self, action: Action, around: AroundRun | None = None) -> ActionResult:
        """Carry out ``action`` once per request id; the card it names shows the result, which
        is also returned. A request sent again (replayed, or the same one from a second comm)
        gets its first answer; an id reused for another action is refused.

        ``around`` runs a retry's attempt (``%gpuguard retry`` runs it in its own cell);
        by default it runs where the card shows it.
        """
        if action.request is None:
            return self._carry_out(action, around)
        answered = self._answered.get(action.request)
        if answered is not None:
            first, result = answered
            if first == action:
                return result
            return ActionResult(action.action, False, request_reused(action.request))
        # Remembered before it runs: the same request arriving during it is not run twice.
        self._answered[action.request] = (
            action,
            ActionResult(action.action, False, REQUEST_RUNNING),
        )
        result = self._carry_out(action, around)
        self._answered[action.request] = (action, result)
        while len(self._answered) > MAX_ANSWERED_REQUESTS:
            self._answered.popitem(last=False)
        return result

    def _carry_out(self, action: Action, around: AroundRun | None) -> ActionResult:
        refusal = self.refusal(action)
        live = self._cards.get(action.card)
        if refusal is not None or live is None:
            return ActionResult(
                action.action, False, refusal or "", live.card if live is not None else None
            )
        if action.action == APPLY_TO_CELL and action.args.batch_size is not None:
            # The frontend wrote the size into the cell: the card's words say what it holds.
            live.parts = replace(live.parts, applied=action.args.batch_size)
            message = applied_text(action.args.batch_size)
            live.display.show(live.card, message)
            return ActionResult(action.action, True, message, live.card)
        if action.action in FRONTEND_ACTIONS:
            offer = next(o for o in live.card.actions if o.action == action.action)
            return ActionResult(
                action.action, True, f"{offer.label}: carried out by the frontend", live.card
            )
        if action.action == FREE_MEMORY:
            message = live.free()
            live.display.show(live.card, message)
            return ActionResult(action.action, True, message, live.card)
        find_max = action.action == FIND_MAX
        size = None if find_max else action.args.batch_size or _offered_size(live)
        last = live.retry(size, FIND_MAX_RUNS, find_max, around)
        message = live.verdict_message() or (
            attempt_text(attempt_record(last), None) if last else ""
        )
        live.display.show(live.card, message)
        return ActionResult(action.action, last is not None and last.fits, message, live.card)

    def refusal(self, action: Action) -> str | None:
        """Why ``action`` cannot run now, in a sentence; ``None`` when it can."""
        live = self._cards.get(action.card)
        if live is None:
            return refusal(None, action, False, MAX_LIVE_CARDS)
        request = live.parts.request
        can_retry = request is not None and request.retry is not None and not live.parts.running
        return refusal(live.card, action, can_retry, MAX_LIVE_CARDS)

    def freeze_all(self) -> None:
        """Unloading: every card keeps its lasting form and releases its widgets."""
        while self._cards:
            _, live = self._cards.popitem(last=False)
            live.display.freeze(live.card)
        self._announce()


def _offered_size(live: LiveCard) -> int | None:
    offer = next((o for o in live.card.actions if o.action == RETRY), None)
    return offer.batch_size if offer is not None else None
