"""Every card the guard can show is valid against the shipped schema: one for each case of the
error corpus, and for out-of-memory cases the card again after retries of every outcome."""

from __future__ import annotations

from pathlib import Path

import pytest

from ipy_gpuguard.cards import CardParts, base_card, reclaim_of, with_parts
from ipy_gpuguard.diagnosis import Context, Kind, diagnose
from ipy_gpuguard.protocol import to_json
from ipy_gpuguard.retry import CellFrame, RetrySettings, Runners, RunOutcome, plan_retry

from ..protocol.validate import assert_valid

CORPUS = Path(__file__).parent.parent / "data" / "errors"
CASES = sorted(CORPUS.glob("*/*.txt"))
CELL = "%%gpuguard\nBATCH = 256  # size\nmodel.fit(x, y, batch_size=BATCH)\n"
GIB = 2**30


def card_for(text: str, request=None):
    diagnosis = diagnose(text, Context(watchdog_interrupted=True))
    base = base_card(diagnosis, "c1", (), ("a note",), "cell-1", 3)
    return diagnosis, with_parts(base, CardParts(None, request, can_free_memory=True))


def request_for(diagnosis, fits_below: int, held_bytes: int = 0):
    def run(rewritten, probe):
        size = int(rewritten.source.split("BATCH = ")[1].split()[0])
        if size < fits_below:
            return RunOutcome(finished=True, peak_bytes=size * 2**20)
        return RunOutcome(
            finished=True,
            error="ResourceExhaustedError: OOM",
            out_of_memory=True,
            allocator_after_bytes=held_bytes,
        )

    return plan_retry(
        CELL, RetrySettings(), diagnosis, (CellFrame(3),), {}, (8 * GIB,), 0, None, Runners(run)
    )


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case.parent.name}/{case.stem}")
def test_the_card_of_each_corpus_case_is_valid(case):
    diagnosis, card = card_for(case.read_text())
    if diagnosis.kind is Kind.UNKNOWN:
        return  # no card is shown for what no rule recognises
    assert_valid("Card", to_json(card))
    if diagnosis.kind is not Kind.OUT_OF_MEMORY:
        return
    for fits_below, held in ((100, 0), (1, 0), (100, 4 * GIB)):
        request = request_for(diagnosis, fits_below, held)
        assert request.retry is not None
        request.retry.auto(12, find_max=True, report=lambda attempt: None)
        _, card = card_for(case.read_text(), request)
        data = to_json(card)
        assert_valid("Card", data)
        assert data["retry"]["verdict"] is not None


def test_the_batch_edit_is_what_a_frontend_writes_into_the_cell():
    diagnosis = diagnose("ResourceExhaustedError: OOM when allocating tensor", Context())
    request = request_for(diagnosis, fits_below=100)
    request.retry.auto(12, find_max=True, report=lambda attempt: None)
    _, card = card_for("ResourceExhaustedError: OOM when allocating tensor", request)
    edit = card.batch_edit
    assert card.retry.verdict.state == "fixed"
    assert edit.batch_size == card.retry.verdict.batch_size
    (change,) = edit.edits
    assert (change.line, change.column, change.old_text) == (2, 8, "256")
    written = CELL[: change.start] + change.new_text + CELL[change.end :]
    assert f"BATCH = {edit.batch_size}  # size" in written
    apply = next(offer for offer in card.actions if offer.action == "apply_to_cell")
    assert apply.label == f"Apply {edit.batch_size} to the cell"


def test_a_card_whose_memory_did_not_come_back_offers_the_restart_not_a_retry():
    diagnosis = diagnose("ResourceExhaustedError: OOM when allocating tensor", Context())
    request = request_for(diagnosis, fits_below=1, held_bytes=4 * GIB)
    request.retry.attempt(32)
    _, card = card_for("ResourceExhaustedError: OOM when allocating tensor", request)
    offers = {offer.action: offer for offer in card.actions}
    assert card.retry.verdict.state == "memory_held"
    assert not offers["retry"].enabled
    assert "memory did not come back" in offers["retry"].reason
    assert offers["restart_and_run_to_here"].enabled


@pytest.mark.parametrize(
    ("held", "fits_below", "warned"),
    [
        (42 * 2**20, 1, False),  # a model's first fit made its optimizer's variables
        (4 * GIB, 1, True),  # enough to make a retry here fail
        (4 * GIB, 100, False),  # ... but a retry has fixed the cell since
    ],
)
def test_memory_still_held_is_a_warning_only_when_it_can_make_a_retry_fail(
    held, fits_below, warned
):
    """Issue 35 item 16: "the allocator still holds 42.1 MiB more … a retry in this kernel
    may fail again" after a model's first fit, and still beside "Fixed: batch size 128 fits"."""
    from ipy_gpuguard.record import Reclaimed

    diagnosis = diagnose("ResourceExhaustedError: OOM when allocating tensor", Context())
    request = request_for(diagnosis, fits_below)
    request.retry.auto(12, find_max=False, report=lambda attempt: None)
    base = base_card(diagnosis, "c1", (), (), "cell-1", 3)
    parts = CardParts(reclaim_of(Reclaimed(0, 3 * GIB, held, 2)), request, can_free_memory=True)
    card = with_parts(base, parts)
    assert (card.retry.verdict.state == "fixed") is (fits_below > 1)
    assert ("may fail again" in card.words.reclaim) is warned
    assert "more than before the cell" in card.words.reclaim


@pytest.mark.parametrize("running", [True, False])
def test_the_next_size_names_no_terminal_command_during_a_search_nor_a_fitting_size_as_a_try(
    running,
):
    """Issue 35 item 16: "Next: %gpuguard retry tries batch size 128" in Lab during a search,
    naming a terminal command and a size that already fitted."""
    from dataclasses import replace

    from ipy_gpuguard.cards.words import verdict_lines
    from ipy_gpuguard.protocol import AttemptRecord, RetryVerdict

    diagnosis = diagnose("ResourceExhaustedError: OOM when allocating tensor", Context())
    _, card = card_for("ResourceExhaustedError: OOM", request_for(diagnosis, fits_below=100))
    measured = (
        AttemptRecord(256, "out_of_memory", None, "OOM", probe=True),
        AttemptRecord(128, "fits", 2**30, None, probe=True),
    )
    state = replace(
        card.retry,
        attempts=measured,
        verdict=RetryVerdict("next", 128, None, True, False),
        running=running,
    )
    (line,) = verdict_lines(state, None)
    assert line.startswith("Next: a run at batch size 128, which fitted, trains the model at it")
    assert ("%gpuguard retry" in line) is not running


@pytest.mark.parametrize(
    ("error", "label"),
    [
        (
            "RuntimeError: [enforce fail at alloc_cpu.cpp:114] DefaultCPUAllocator: can't allocate memory: you tried to allocate 8589934592 bytes.",
            "Free CPU memory",
        ),
        (
            "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.90 GiB total capacity)",
            "Free GPU memory",
        ),
    ],
    ids=["cpu", "gpu"],
)
def test_the_free_memory_button_names_the_memory_that_ran_out(error, label):
    """Issue 35 item 16: "Free GPU memory" on an "Out of CPU memory" card."""
    _, card = card_for(error)
    (button,) = [offer for offer in card.actions if offer.action == "free_memory"]
    assert button.label == label
    assert label.split()[1] in card.title


def test_the_estimate_of_what_fits_leaves_the_card_once_a_size_fitted():
    """Issue 35 item 16: "batch that would fit (estimate): under 1%" beside a fit at 12.5%."""
    oom = (
        "ResourceExhaustedError: OOM when allocating tensor with shape[256,1048576,1048576] and "
        "type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc"
    )
    from ipy_gpuguard.diagnosis.context import DeviceMemory

    diagnosis = diagnose(oom, Context(devices=(DeviceMemory(0, "GPU 0", 8 * GIB),)))
    assert "fit_fraction" in diagnosis.facts
    request = request_for(diagnosis, fits_below=100)
    base = base_card(diagnosis, "c1", (), (), "cell-1", 3)
    before = with_parts(base, CardParts(None, request, can_free_memory=True))
    assert "fit_fraction" in [fact.name for fact in before.facts]
    request.retry.auto(12, find_max=False, report=lambda attempt: None)
    after = with_parts(base, CardParts(None, request, can_free_memory=True))
    assert after.retry.verdict.state == "fixed"
    assert "fit_fraction" not in [fact.name for fact in after.facts]
    assert "(estimate)" not in card_text_of(after)


def card_text_of(card):
    from ipy_gpuguard.ui.card_render import card_text

    return card_text(card)
