"""How a failed cell is retried: the retry options of ``%%gpuguard``, checked."""

from __future__ import annotations

import keyword
from dataclasses import dataclass

from ..protocol import MAX_BATCH_SIZE

#: Attempts of ``--auto-retry`` without a number, and of a search for the largest batch
#: (``--find-max``, the card's "Find the largest batch that fits", ``%gpuguard retry max``).
AUTO_RETRY_RUNS = 5
FIND_MAX_RUNS = 12
#: The most attempts a cell may ask for: each is a whole run of the cell.
MAX_RUNS = 100


class _DefaultRuns:
    """What ``--auto-retry`` without a number parses to: the default for the search asked for.

    Not a number (``-1`` once was, and ``--auto-retry -1`` then silently meant the default),
    and not a string, which argparse would pass through ``int``."""

    def __repr__(self) -> str:
        return "DEFAULT_RUNS"


DEFAULT_RUNS = _DefaultRuns()


@dataclass(frozen=True)
class RetrySettings:
    """``auto_runs``: attempts a failed cell makes by itself (0: only when asked); ``margin``:
    how close to a size that failed a search for the largest goes (a fraction)."""

    auto_runs: int = 0
    find_max: bool = False
    margin: float = 0.1
    min_batch: int = 1
    keep_effective_batch: bool = False
    batch_var: str | None = None

    @property
    def retries_by_itself(self) -> bool:
        """Whether a retry or a search may follow the cell without being asked again: it then
        needs a batch size to change, and the models of earlier cells kept as they were."""
        return self.auto_runs > 0


def retry_settings(
    auto_retry: int | _DefaultRuns | None,
    find_max: bool,
    margin_percent: float | None,
    min_batch: int | None,
    batch_var: str | None,
    keep_effective_batch: bool = False,
) -> RetrySettings:
    """The settings from the magic's options; ``ValueError`` says which option is wrong."""
    if isinstance(auto_retry, int) and not 1 <= auto_retry <= MAX_RUNS:
        raise ValueError(
            f"--auto-retry takes a number of attempts from 1 to {MAX_RUNS}, not {auto_retry}"
        )
    if margin_percent is not None and not 0 < margin_percent < 100:
        raise ValueError(
            f"--margin is a percentage between 0 and 100, like 10, not {margin_percent:g}"
        )
    if min_batch is not None and not 1 <= min_batch <= MAX_BATCH_SIZE:
        raise ValueError(f"--min-batch is a batch size from 1 to {MAX_BATCH_SIZE}, not {min_batch}")
    if batch_var is not None and (not batch_var.isidentifier() or keyword.iskeyword(batch_var)):
        raise ValueError(f"--batch-var takes a variable name like BATCH_SIZE, not {batch_var!r}")
    default_runs = FIND_MAX_RUNS if find_max else AUTO_RETRY_RUNS
    if auto_retry is None:
        runs = FIND_MAX_RUNS if find_max else 0  # --find-max alone implies --auto-retry
    else:
        runs = auto_retry if isinstance(auto_retry, int) else default_runs
    defaults = RetrySettings()
    return RetrySettings(
        auto_runs=runs,
        find_max=find_max,
        margin=defaults.margin if margin_percent is None else margin_percent / 100,
        min_batch=defaults.min_batch if min_batch is None else min_batch,
        keep_effective_batch=keep_effective_batch,
        batch_var=batch_var,
    )
