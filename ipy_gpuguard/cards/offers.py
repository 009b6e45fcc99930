"""The retry part of an out-of-memory card as data: the offer, the attempts, the verdict, the
edit that keeps the working size in the cell, and the buttons with why each is disabled.

Every offer and every refusal of a retry is decided here, once: the widget buttons, the lab
extension and ``%gpuguard retry`` read them from the card."""

from __future__ import annotations

import hashlib
from dataclasses import replace

from ..protocol import (
    APPLY_TO_CELL,
    FIND_MAX,
    RESTART_AND_RUN_TO_HERE,
    RETRY,
    Action,
    ActionOffer,
    BatchEdit,
    Card,
    RetryState,
    RetryVerdict,
)
from ..retry import (
    FIND_MAX_RUNS,
    FIXED,
    GAVE_UP,
    MEMORY_HELD,
    NEXT,
    CellRetry,
    RetryRequest,
    verdict_of,
)
from .retry_words import attempt_record, note_text, offer_notes


def retry_state(request: RetryRequest, running: bool = False) -> RetryState:
    retry = request.retry
    attempts = tuple(attempt_record(attempt) for attempt in retry.attempts) if retry else ()
    verdict = verdict_of(retry)
    if verdict is not None and retry is not None and retry.notes:
        verdict = replace(verdict, notes=tuple(note_text(note) for note in retry.notes))
    return RetryState(
        offer=replace(request.offer, notes=offer_notes(request)),
        attempts=attempts,
        verdict=verdict,
        capacity_bytes=retry.setup.capacity_bytes if retry else None,
        running=running,
    )


def batch_edit(request: RetryRequest, cell_id: str | None) -> BatchEdit | None:
    """The edit to the working size (or, before one is known, the offered size); ``None`` when
    the batch size is not a literal of this cell."""
    retry = request.retry
    size = _size_to_keep(request)
    if retry is None or size is None or retry.target.literal is None:
        return None
    edits = retry.rewrite(size).edits
    digest = hashlib.sha256(retry.setup.cell.encode("utf-8")).hexdigest()
    return BatchEdit(cell_id, digest, size, edits)


def retry_actions(request: RetryRequest, running: bool = False) -> tuple[ActionOffer, ...]:
    """The retry's buttons: retry, find the largest, and the two the frontend carries out."""
    retry = request.retry
    if retry is None:
        reason = f"Retry not offered: {request.offer.reason}"
        return (ActionOffer(RETRY, _retry_label(None), None, False, reason),)
    verdict = verdict_of(retry)
    step = retry.suggestion()
    size = step.size if step is not None else None
    search = ActionOffer(
        FIND_MAX,
        "Find the largest batch that fits",
        None,
        *_why_not_search(retry, verdict, running),
    )
    offers = [search]
    if not request.search_only:  # a cell that fitted has no smaller size to retry
        retry_offer = ActionOffer(
            RETRY, _retry_label(size), size, *_why_not_retry(retry, verdict, running)
        )
        offers.insert(0, retry_offer)
    kept = _size_to_keep(request)
    if verdict is not None and verdict.state == FIXED and retry.target.literal is not None:
        offers.append(ActionOffer(APPLY_TO_CELL, f"Apply {kept} to the cell", kept, True, ""))
    if verdict is not None and verdict.state == MEMORY_HELD and retry.target.literal is not None:
        label = f"Restart and run to here with {kept}"
        offers.append(ActionOffer(RESTART_AND_RUN_TO_HERE, label, kept, True, ""))
    return tuple(offers)


def _size_to_keep(request: RetryRequest) -> int | None:
    verdict = verdict_of(request.retry)
    if verdict is not None and verdict.batch_size is not None:
        return verdict.batch_size
    return request.offer.batch_size


def _why_not_retry(
    retry: CellRetry, verdict: RetryVerdict | None, running: bool
) -> tuple[bool, str]:
    if running:
        return False, "a retry is running"
    if verdict is not None and verdict.state == MEMORY_HELD:
        return False, "memory did not come back: a retry in this kernel would fail again"
    if verdict is not None and verdict.state == GAVE_UP:
        return False, f"no batch size down to {retry.setup.min_batch} fits"
    if retry.suggestion() is None:
        if verdict is not None and verdict.state == FIXED:
            return False, f"batch size {verdict.batch_size} fits: nothing smaller to try"
        return False, "the search is over"
    return True, ""


def _why_not_search(
    retry: CellRetry, verdict: RetryVerdict | None, running: bool
) -> tuple[bool, str]:
    enabled, reason = _why_not_retry(retry, verdict, running)
    if running or (verdict is not None and verdict.state in (MEMORY_HELD, GAVE_UP)):
        return enabled, reason
    if (
        verdict is not None
        and verdict.state in (FIXED, NEXT)
        and not retry.can_search(FIND_MAX_RUNS)
    ):
        return False, f"batch size {retry.search.largest_fitting} is the largest that fits"
    return True, ""


def _retry_label(size: int | None) -> str:
    return f"Retry with batch size {size}" if size is not None else "Retry with a smaller batch"


def refusal(card: Card | None, action: Action, can_retry: bool, live_cards: int) -> str | None:
    """Why ``action`` cannot run on ``card`` now, in a sentence; ``None`` when it can.

    ``card`` is ``None`` when it can no longer act (only the last ``live_cards`` do);
    ``can_retry``: the card holds a retry that no attempt is running now.
    """
    if card is None:
        return (
            f"this card can no longer act: only the last {live_cards} cards do; run the cell again"
        )
    offer = next((o for o in card.actions if o.action == action.action), None)
    if offer is None:
        return f"{action.action} is not offered on this card ({card.title})"
    if action.action == RETRY and action.args.batch_size is not None:
        return None if can_retry else offer.reason
    if not offer.enabled:
        return offer.reason
    if action.action == RETRY and offer.batch_size is None:
        return "the search is over; name a size, like %gpuguard retry 16"
    return None


#: The answer to a request sent again while it is still being carried out.
REQUEST_RUNNING = "this request is being carried out; its result comes when it ends"


def request_reused(request: str) -> str:
    """The refusal of an action sent with the id of another one already carried out."""
    return f"request {request!r} was already carried out: a new action needs a new id"


def applied_text(size: int) -> str:
    """What the card says once its Apply wrote ``size`` into the cell."""
    return f"Batch size {size} is now in the cell."
