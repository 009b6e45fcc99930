"""The dispatcher of card actions: by id, with a reason for every refusal, live cards bounded."""

from __future__ import annotations

from ipy_gpuguard.cards import CardParts, base_card
from ipy_gpuguard.diagnosis import Context, diagnose
from ipy_gpuguard.protocol import (
    APPLY_TO_CELL,
    FREE_MEMORY,
    RETRY,
    Action,
    ActionArgs,
    parse_action,
)
from ipy_gpuguard.record import Reclaimed
from ipy_gpuguard.retry import CellFrame, RetrySettings, Runners, RunOutcome, plan_retry
from ipy_gpuguard.shell.actions import MAX_LIVE_CARDS, CardActions, LiveCard

OOM = "ResourceExhaustedError: OOM when allocating tensor with shape[256,1024]"
CELL = "model.fit(x, y, batch_size=256)\n"


class Shown:
    """A display that remembers what it was asked to show."""

    def __init__(self):
        self.messages, self.frozen = [], False

    def show(self, card, message=""):
        self.messages.append(message)

    def progress(self, card, line):
        self.messages.append(line)

    def around(self, run):
        return run()

    def freeze(self, card):
        self.frozen = True


def live_card(card_id="c1", fits_below=200):
    diagnosis = diagnose(OOM, Context())

    def run(rewritten, probe):
        size = int(rewritten.source.split("batch_size=")[1].split(")")[0])
        if size < fits_below:
            return RunOutcome(finished=True)
        return RunOutcome(finished=True, error="OOM", out_of_memory=True, allocator_after_bytes=0)

    request = plan_retry(
        CELL, RetrySettings(), diagnosis, (CellFrame(1),), {}, (2**33,), 0, None, Runners(run)
    )
    base = base_card(diagnosis, card_id, (), (), "cell-1", 1)
    parts = CardParts(None, request, can_free_memory=True)
    return LiveCard(base, parts, Shown(), lambda: Reclaimed(0, 10, 0, 2))


def test_a_retry_by_id_runs_frees_first_and_answers_with_the_card():
    actions = CardActions()
    live = live_card()
    actions.add(live)
    result = actions.act(parse_action({"action": "retry", "card": "c1", "args": {}}))
    assert result.ok
    assert result.message.startswith("Fixed: batch size 128 fits")
    assert result.card.reclaimed.freed_bytes == 10  # the failure's memory was freed first
    assert live.display.messages[-1] == result.message


def test_every_refusal_says_why():
    actions = CardActions()
    actions.add(live_card())
    unknown = actions.act(Action(RETRY, "nope"))
    assert not unknown.ok
    assert "can no longer act" in unknown.message
    not_offered = actions.act(Action(APPLY_TO_CELL, "c1"))
    assert not not_offered.ok
    assert not_offered.message.startswith("apply_to_cell is not offered on this card")


def test_after_a_fix_the_frontend_is_told_to_apply_it_and_the_kernel_does_not():
    actions = CardActions()
    actions.add(live_card())
    actions.act(Action(RETRY, "c1", ActionArgs(32)))
    applied = actions.act(Action(APPLY_TO_CELL, "c1"))
    assert applied.ok
    assert applied.message == "Apply 32 to the cell: carried out by the frontend"
    assert applied.card.batch_edit.edits[0].new_text == "32"


def test_free_memory_says_what_came_back():
    actions = CardActions()
    actions.add(live_card())
    result = actions.act(Action(FREE_MEMORY, "c1"))
    assert result.ok
    assert result.message.startswith("Freed 10 B")


def test_only_the_last_cards_stay_live_and_older_ones_freeze():
    actions = CardActions()
    cards = [live_card(f"c{n}") for n in range(MAX_LIVE_CARDS + 3)]
    for live in cards:
        actions.add(live)
    assert len(actions) == MAX_LIVE_CARDS
    assert [live.display.frozen for live in cards[:4]] == [True, True, True, False]
    assert actions.get("c0") is None
    actions.freeze_all()
    assert all(live.display.frozen for live in cards)


def test_the_verdicts_held_memory_and_the_reclaim_line_are_one_measurement():
    """Issue 21: "Memory did not come back (2.0 GiB still held)" beside "still held: 1.0 GiB":
    the reclaim line was the first failure's, the verdict the last attempt's."""
    from ipy_gpuguard.protocol import Reclaim

    gib = 2**30
    diagnosis = diagnose(OOM, Context())

    def run(rewritten, probe):
        after_attempt = Reclaim(False, freed_bytes=gib, held_bytes=2 * gib, frames_cleared=3)
        return RunOutcome(
            finished=True,
            error="OOM",
            out_of_memory=True,
            allocator_after_bytes=2 * gib,
            reclaimed=after_attempt,
        )

    request = plan_retry(
        CELL, RetrySettings(), diagnosis, (CellFrame(1),), {}, (2**33,), 0, None, Runners(run)
    )
    base = base_card(diagnosis, "c1", (), (), "cell-1", 1)
    first = Reclaimed(0, 3 * gib, gib, 2)  # the cell's own failure: 1 GiB still held
    live = LiveCard(base, CardParts(None, request, can_free_memory=True), Shown(), lambda: first)
    live.retry(None, 1, False, None)
    card = live.card
    assert card.retry.verdict.state == "memory_held"
    assert card.retry.verdict.held_bytes == card.reclaimed.held_bytes == 2 * gib
    assert "2.00 GiB still held" in card.words.verdict[0]
    assert "still holds 2.00 GiB more" in card.words.reclaim


def test_the_size_apply_wrote_is_what_the_card_says_the_cell_holds():
    """Issue 35 item 10: after Apply 128 and a search, the card said "the cell's source still
    says 1024" while the cell said 128."""
    actions = CardActions()
    live = live_card(fits_below=200)
    actions.add(live)
    assert actions.act(parse_action({"action": "retry", "card": "c1", "args": {}})).ok
    assert "still says 256: change it to keep 128" in " ".join(live.card.words.verdict)
    applied = actions.act(
        parse_action({"action": "apply_to_cell", "card": "c1", "args": {"batch_size": 128}})
    )
    assert applied.ok
    assert applied.message == "Batch size 128 is now in the cell."
    assert "256" not in " ".join(applied.card.words.verdict)
    assert "still says" not in " ".join(applied.card.words.verdict)
    assert actions.act(parse_action({"action": "find_max", "card": "c1", "args": {}})).ok
    verdict = " ".join(live.card.words.verdict)
    assert "The cell's source says 128: change it to keep 1" in verdict
    assert "256" not in verdict
