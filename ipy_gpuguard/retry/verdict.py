"""Where a cell's retries stand after an attempt: the one decision every renderer shows.

The widget card, the text card, ``%gpuguard retry`` and the lab extension all read this
:class:`~ipy_gpuguard.protocol.RetryVerdict`; none of them decides on its own whether the cell
was fixed or what the next size is.
"""

from __future__ import annotations

from ..protocol import RetryVerdict
from .attempts import Attempt, CellRetry

FIXED, NEXT, MEMORY_HELD, GAVE_UP, OTHER_ERROR, STOPPED = (
    "fixed",
    "next",
    "memory_held",
    "gave_up",
    "other_error",
    "stopped",
)


def decide(retry: CellRetry, last: Attempt | None) -> RetryVerdict | None:
    """The verdict after ``last`` (``cards/`` adds the words of what the search noticed)."""
    return _decide(retry, last)


def _decide(retry: CellRetry, last: Attempt | None) -> RetryVerdict | None:
    """The verdict after ``last``; ``None`` before any attempt, or when nothing is left to say.

    Fixed means the last run was whole and fitted at the size the search returns, so the
    namespace (and the model it trained) is that run's; a probe that fitted is not yet. Memory
    that did not come back after a failure outranks the next size: a retry in this kernel would
    fail again, and the size is what to run after a restart.
    """
    if last is None:
        return None
    search = retry.search
    searched = search.settings.find_max
    remembered = retry.setup.memory is not None
    if retry.stopped or last.outcome.interrupted:
        # The model is as the last whole run left it when that run fitted, else as it was
        # before the cell (``CellRetry`` put it back): ``batch_size`` says which.
        whole = next((a for a in reversed(retry.attempts) if not a.probe), None)
        kept = whole.size if whole is not None and whole.fits else None
        return RetryVerdict(STOPPED, kept, None, searched, False)
    if last.fits and not last.probe and search.finished:
        return RetryVerdict(FIXED, last.size, None, searched, remembered and last.fits)
    if search.gave_up:
        return RetryVerdict(GAVE_UP, search.settings.min_batch, None, searched, False)
    held = retry.memory_held(last)
    if held is not None:
        # For a fresh kernel: the size that fitted, else the one that failed here only because
        # memory was held. The next step would be derived from that failure, which says
        # nothing of a fresh kernel (it offered 8 where 64 fitted after the restart).
        return RetryVerdict(MEMORY_HELD, search.largest_fitting or last.size, held, searched, False)
    step = retry.suggestion()
    if not (last.fits or last.outcome.out_of_memory):
        return RetryVerdict(OTHER_ERROR, None, None, searched, False)
    if step is not None:
        return RetryVerdict(NEXT, step.size, None, searched, False)
    return None


def verdict_of(retry: CellRetry | None) -> RetryVerdict | None:
    """The verdict after a cell's last attempt; ``None`` before any."""
    if retry is None or not retry.attempts:
        return None
    return decide(retry, retry.attempts[-1])
