"""What may act on a card is decided from the card alone: every refusal is a sentence."""

from __future__ import annotations

from ipy_gpuguard.cards import CardParts, base_card, with_parts
from ipy_gpuguard.cards.offers import refusal
from ipy_gpuguard.diagnosis import diagnose
from ipy_gpuguard.protocol import APPLY_TO_CELL, FIND_MAX, RETRY, Action, ActionArgs
from ipy_gpuguard.retry import CellFrame, RetrySettings, Runners, RunOutcome, plan_retry

CELL = "%%gpuguard\nBATCH = 256\nmodel.fit(x, y, batch_size=BATCH)\n"
OOM = "ResourceExhaustedError: OOM when allocating tensor with shape[256,1024]"


def oom_card(fits_below: int | None = None):
    diagnosis = diagnose(OOM)

    def run(rewritten, probe):
        size = int(rewritten.source.split("BATCH = ")[1].split()[0])
        if fits_below is not None and size < fits_below:
            return RunOutcome(finished=True, peak_bytes=size)
        return RunOutcome(finished=True, error="OOM", out_of_memory=True)

    request = plan_retry(
        CELL, RetrySettings(), diagnosis, (CellFrame(3),), {}, (2**33,), 0, None, Runners(run)
    )
    if fits_below is not None:
        request.retry.auto(10, True, lambda _attempt: None, lambda attempt: attempt())
    base = base_card(diagnosis, "c1", (), (), None, 1)
    return with_parts(base, CardParts(None, request))


def test_a_card_that_no_longer_acts_says_how_many_do():
    assert refusal(None, Action(RETRY, "c1"), False, 20) == (
        "this card can no longer act: only the last 20 cards do; run the cell again"
    )


def test_an_action_the_card_does_not_offer_is_named_with_the_card():
    card = oom_card()
    reason = refusal(card, Action(APPLY_TO_CELL, "c1"), True, 20)
    assert reason == f"apply_to_cell is not offered on this card ({card.title})"


def test_a_named_size_may_run_while_no_attempt_runs_and_is_refused_while_one_does():
    card = oom_card()
    named = Action(RETRY, "c1", ActionArgs(16))
    assert refusal(card, named, True, 20) is None
    assert refusal(card, named, False, 20) is not None


def test_after_the_search_the_offer_says_why_it_is_off():
    card = oom_card(fits_below=100)
    search = next(offer for offer in card.actions if offer.action == FIND_MAX)
    assert not search.enabled
    assert refusal(card, Action(FIND_MAX, "c1"), True, 20) == search.reason
