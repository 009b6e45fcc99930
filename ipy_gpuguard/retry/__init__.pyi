"""Retrying a cell that ran out of memory, or searching for the largest batch of one that fits:
find its batch size in its syntax, rewrite only that number, choose the next size, run the
attempts (a search probes a few steps per size and puts back what they trained), decide how
they stand, remember what worked.

Imports neither IPython nor widgets nor a framework: a cell runs through the ``run`` callable
the session gives, and what a card shows of a retry is built from its state in ``cards/``.
"""

from .attempts import Attempt, CellRetry, RetrySetup, RunOutcome
from .find import BatchFinding, find_batch_size
from .frames import CellFrame, cell_frames
from .memory import BatchMemory, Remembered, cell_key
from .plan import RetryRequest, plan_retry, plan_search, remembered_note
from .probe import PROBE_STEPS, FitProbe, ProbeEnded, SearchEnd
from .resolve import BatchTarget, Literal
from .rewrite import Rewrite, rewrite, without_batch_size
from .search import BatchSearch, SearchSettings, Step, Trial
from .settings import (
    AUTO_RETRY_RUNS,
    DEFAULT_RUNS,
    FIND_MAX_RUNS,
    RetrySettings,
    retry_settings,
)
from .verdict import FIXED, GAVE_UP, MEMORY_HELD, NEXT, OTHER_ERROR, decide, verdict_of

__all__ = [
    "AUTO_RETRY_RUNS",
    "DEFAULT_RUNS",
    "FIND_MAX_RUNS",
    "FIXED",
    "GAVE_UP",
    "MEMORY_HELD",
    "NEXT",
    "OTHER_ERROR",
    "PROBE_STEPS",
    "Attempt",
    "BatchFinding",
    "BatchMemory",
    "BatchSearch",
    "BatchTarget",
    "CellFrame",
    "CellRetry",
    "FitProbe",
    "Literal",
    "ProbeEnded",
    "Remembered",
    "RetryRequest",
    "RetrySettings",
    "RetrySetup",
    "Rewrite",
    "RunOutcome",
    "SearchEnd",
    "SearchSettings",
    "Step",
    "Trial",
    "cell_frames",
    "cell_key",
    "decide",
    "find_batch_size",
    "plan_retry",
    "plan_search",
    "remembered_note",
    "retry_settings",
    "rewrite",
    "verdict_of",
    "without_batch_size",
]
