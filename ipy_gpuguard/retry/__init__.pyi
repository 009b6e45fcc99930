"""Retrying a cell that ran out of memory, or searching for the largest batch of one that fits:
find its batch size in its syntax, rewrite only that number, choose the next size, run the
attempts (a search measures each size with the guard's own training calls on the cell's model
and data, and puts back what they trained), decide how they stand, remember what worked.

Imports neither IPython nor widgets nor a framework: a cell runs through the ``run`` callable
the session gives, the framework is reached only through the person's model, and what a card shows of a retry is built from its state in ``cards/``.
"""

from .attempts import Attempt, CellRetry, RetrySetup, Runners
from .find import BatchFinding, find_batch_size
from .frames import CellFrame, cell_frames
from .measure import PROBE_STEPS, FitCall, Measurer, PeakReader
from .memory import BatchMemory, Remembered, cell_key
from .outcome import Ending, RunOutcome
from .plan import RetryRequest, plan_retry, plan_search, remembered_note
from .probe import BeforeTheSearch, FitWatch
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
from .verdict import (
    FIXED,
    GAVE_UP,
    MEMORY_HELD,
    NEXT,
    OTHER_ERROR,
    decide,
    verdict_of,
)

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
    "BeforeTheSearch",
    "CellFrame",
    "CellRetry",
    "Ending",
    "FitCall",
    "FitWatch",
    "Literal",
    "Measurer",
    "PeakReader",
    "Remembered",
    "RetryRequest",
    "RetrySettings",
    "RetrySetup",
    "Rewrite",
    "RunOutcome",
    "Runners",
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
