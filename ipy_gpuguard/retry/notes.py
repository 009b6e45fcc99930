"""What a search noticed on the way, as codes and data: ``cards/`` words them.

A note names why sizes were run whole rather than measured with the guard's own calls, an input
of an earlier cell that the runs used up, or a model of an earlier cell that a search offered
under a cell that fitted would train again. ``detail`` is the datum the card names: a type, a
number of fits, a size and an error.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class NoteKind(enum.Enum):
    WHOLE_RUNS = "whole_runs"  # each size a whole run of the cell; ``why`` says why
    USED_UP_INPUT = "used_up_input"  # ``detail``: the type of a one-shot input of an earlier cell
    TRAINED_EARLIER_MODEL = "trained_earlier_model"  # the offered search trains it again


class WhyWholeRuns(enum.Enum):
    NO_FIT = "no_fit"  # not a Keras fit (a custom loop, another framework)
    SEVERAL_FITS = "several_fits"  # ``detail``: how many
    OWN_BATCHES = "own_batches"  # ``detail``: the type of the data, which batches itself
    FIT_CUT = "fit_cut"  # its fit did not run to its end
    MEASURE_FAILED = "measure_failed"  # ``detail``: the size; ``error``: the guard's fit's error


@dataclass(frozen=True)
class SearchNote:
    kind: NoteKind
    why: WhyWholeRuns | None = None
    detail: str = ""
    error: str = ""
