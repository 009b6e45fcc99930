"""The card's words: an unknown figure is said in words, the estimate and the offered size agree
or the card says why, and the proposed edit is a proposal (issue 21, "Why" and item 5)."""

from __future__ import annotations

from ipy_gpuguard.cards import CardParts, base_card, with_parts
from ipy_gpuguard.diagnosis import Context, DeviceMemory, diagnose
from ipy_gpuguard.protocol import AttemptRecord, Reclaim
from ipy_gpuguard.retry import CellFrame, RetrySettings, Runners, RunOutcome, plan_retry
from ipy_gpuguard.ui.card_render import card_html, card_text

CELL = "%%gpuguard\nBATCH_SIZE = 512\nmodel.fit(x, y, batch_size=BATCH_SIZE)\n"
#: TensorFlow's OOM with a shape that gives an estimate of what fits (the batch dimension).
OOM = (
    "ResourceExhaustedError: OOM when allocating tensor with shape[512,1048576,1048576] and "
    "type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc"
)
GIB = 2**30


def card(fits_below: int, peak_bytes: int | None, reclaimed: Reclaim | None = None):
    diagnosis = diagnose(OOM, Context(devices=(DeviceMemory(0, "GPU 0", 8 * GIB),)))

    def run(rewritten, probe):
        size = int(rewritten.source.split("BATCH_SIZE = ")[1].split()[0])
        if size < fits_below:
            return RunOutcome(finished=True, peak_bytes=peak_bytes)
        return RunOutcome(finished=True, error="ResourceExhaustedError: OOM", out_of_memory=True)

    request = plan_retry(
        CELL, RetrySettings(), diagnosis, (CellFrame(3),), {}, (8 * GIB,), 0, None, Runners(run)
    )
    base = base_card(diagnosis, "c1", (), (), "cell-1", 3)
    return request, lambda: with_parts(base, CardParts(reclaimed, request, can_free_memory=True))


def test_an_estimate_below_the_offered_size_is_explained():
    """The card said "under 1% of the current batch should fit" beside "Retry with batch size
    64", which fitted, and never why the two differ."""
    request, build = card(fits_below=100, peak_bytes=None)
    offered = build()
    fraction = next(fact for fact in offered.facts if fact.name == "fit_fraction")
    assert fraction.value * 512 < request.offer.batch_size  # the case of the issue
    (why,) = [line for line in offered.words.offer if line.startswith("The estimate")]
    assert f"tries {request.offer.batch_size} first" in why
    assert "divides the batch by at most 8" in why
    assert why in card_text(offered)


def test_a_peak_the_allocator_did_not_measure_is_said_in_words():
    """The lab extension's table showed a column of "?" under "peak memory"."""
    request, build = card(fits_below=100, peak_bytes=None)
    request.retry.attempt(request.offer.batch_size)
    (attempt,) = build().words.attempts
    assert attempt.peak == "not measured: the allocator keeps no statistics here"
    assert attempt.line == f"batch size {request.offer.batch_size}: fits"
    assert "?" not in card_html(build())
    assert "n/a" not in card_text(build())


def test_a_measured_peak_is_given_of_the_devices_capacity():
    request, build = card(fits_below=100, peak_bytes=3 * GIB)
    request.retry.attempt(request.offer.batch_size)
    (attempt,) = build().words.attempts
    assert attempt.peak == "3.00 GiB of 8.00 GiB"
    assert (
        build()
        .words.verdict[0]
        .startswith(
            f"Fixed: batch size {request.offer.batch_size} fits (peak 3.00 GiB of 8.00 GiB)"
        )
    )


def test_freeing_with_no_allocator_figures_says_so_in_words():
    """ "Freeing the failure gave back ?; still held: ?." in the lab extension."""
    _, build = card(100, None, Reclaim(False, None, None, frames_cleared=12))
    assert build().words.reclaim == (
        "Cleared 12 frames of the failed call and collected garbage; no framework allocator "
        "to measure what came back."
    )


def test_the_edit_is_a_proposal_and_only_once_a_size_has_fitted():
    """ "In the cell: line 2: BATCH_SIZE = 96" showed before Apply, while the cell said 512."""
    request, build = card(fits_below=100, peak_bytes=None)
    assert build().words.edit == ""  # nothing fitted yet: nothing to keep
    request.retry.attempt(request.offer.batch_size)
    size = request.offer.batch_size
    assert build().words.edit == (
        f"To keep batch size {size}, the cell would change: "
        f"line 2: BATCH_SIZE = 512 → BATCH_SIZE = {size}."
    )
    assert "The cell's source still says 512" in build().words.verdict[1]


def test_no_verdict_speaks_of_the_notebook():
    """`%gpuguard retry` in a terminal spoke of "the notebook's cell"."""
    request, build = card(fits_below=100, peak_bytes=None)
    request.retry.auto(12, find_max=True, report=lambda attempt: None)
    assert "notebook" not in card_text(build()).split("What to do:")[0]


def test_an_attempt_that_failed_for_another_reason_says_which():
    from ipy_gpuguard.cards.words import attempt_words

    failed = AttemptRecord(64, "failed", None, "ValueError: bad shape")
    assert attempt_words(failed, None).line == (
        "batch size 64: failed, not for memory (ValueError: bad shape)"
    )


def test_the_smaller_batch_remedy_follows_the_retry_not_the_estimate():
    """The remedy said "a batch under 1% of the current batch should fit" beside "Retry with
    batch size 96", which fitted."""
    request, build = card(fits_below=100, peak_bytes=None)
    (remedy,) = [remedy for remedy in build().remedies if remedy.action == "retry"]
    offered = request.offer.batch_size
    assert remedy.steps == (
        f"Lower batch_size in the cell to {offered}, what a retry tries first, and run it.",
    )
    request.retry.attempt(offered)
    (remedy,) = [remedy for remedy in build().remedies if remedy.action == "retry"]
    assert remedy.steps == (
        f"Keep batch size {offered} in the cell: a retry measured that it fits.",
    )
    assert "should fit" not in card_text(build())
