"""A retry's attempts and what its search noticed, as the card's data and in words.

``retry/`` hands over how each attempt ended and what the search noticed as codes and data
(:mod:`~ipy_gpuguard.retry.notes`); every sentence of them the person reads is written here.
"""

from __future__ import annotations

from ..protocol import AttemptRecord
from ..retry import Attempt, RetryRequest
from ..retry.notes import NoteKind, SearchNote, WhyWholeRuns

#: The error an attempt's row shows when the cell raised nothing but its fit never ended.
FIT_CUT = "its fit did not run to its end: an error was caught in the cell, or under %%capture"


def attempt_record(attempt: Attempt) -> AttemptRecord:
    """The attempt as the card's data: fits, out of memory, stopped, or failed and why."""
    outcome = attempt.outcome
    if attempt.fits:
        result = "fits"
    elif outcome.interrupted:
        result = "stopped"
    elif outcome.out_of_memory:
        result = "out_of_memory"
    else:
        result = "failed"
    error = FIT_CUT if outcome.fit_cut and result == "failed" else outcome.error
    return AttemptRecord(attempt.size, result, outcome.peak_bytes, error, attempt.probe)


_WHY_WHOLE = {
    WhyWholeRuns.NO_FIT: (
        "the cell's training is not a Keras fit (a custom loop, or a framework the heartbeat "
        "does not see)"
    ),
    WhyWholeRuns.SEVERAL_FITS: "the cell ran {detail} fits, and one size is measured on one fit",
    WhyWholeRuns.OWN_BATCHES: (
        "the data given to fit is a {detail}, which brings its own batches: the guard cannot "
        "re-batch it"
    ),
    WhyWholeRuns.FIT_CUT: FIT_CUT,
    WhyWholeRuns.MEASURE_FAILED: (
        "measuring {detail} with the guard's own fit failed ({error}), so the cell's own runs tell"
    ),
}


def note_text(note: SearchNote) -> str:
    """What the card says of a note of the search."""
    if note.kind is NoteKind.WHOLE_RUNS:
        why = _WHY_WHOLE[note.why or WhyWholeRuns.NO_FIT]
        return f"Each size was a whole run of the cell: {why.format(**vars(note))}."
    if note.kind is NoteKind.USED_UP_INPUT:
        return (
            f"The runs drew batches from the {note.detail} given to fit, which an earlier cell "
            "made: it cannot be rewound, so what they drew is gone from it."
        )
    return (
        "This cell's run trained a model of an earlier cell: the search's last run trains it "
        "again from where that run left it. For one training from the start, run the cell that "
        "builds the model, then this one with --find-max."
    )


def offer_notes(request: RetryRequest) -> tuple[str, ...]:
    """What the offer says of its setup: replicas, a remembered size, the effective batch."""
    retry, size = request.retry, request.offer.batch_size
    if retry is None or size is None or request.search_only:
        return ()
    setup, settings = retry.setup, request.settings
    current, replicas = setup.current_size, setup.replicas
    notes = []
    if replicas > 1:
        notes.append(
            f"The batch is split across {replicas} replicas (tf.distribute): {current} is "
            f"{current // replicas} per replica, {size} is {size // replicas}; every size tried "
            f"is a multiple of {replicas}."
        )
    if setup.remembered is not None and setup.remembered.batch_size == size:
        notes.append(f"Batch size {size} fitted this cell on this device before (remembered).")
    if settings.keep_effective_batch and setup.finding.accumulation is None:
        notes.append(
            f"The effective batch changes from {current} to {size}: there is no "
            "gradient_accumulation_steps in the cell to keep it (Keras 3 optimizers take one)."
        )
    elif settings.keep_effective_batch:
        notes.append(
            "gradient_accumulation_steps grows as the batch shrinks: the effective batch stays."
        )
    return tuple(notes)
