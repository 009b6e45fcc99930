"""What happens after a guarded cell, decided in one place, from data; ``shell/`` carries it out.

As IPython's ``run_cell`` returns an ``ExecutionResult`` that its hooks read, the guard's
finish hands these functions what the finished run showed (:class:`CellEnd`) and gets back
frozen decisions: after a failure, whether a card is shown, a retry planned, memory freed and
retries run by themselves (:class:`AfterFailure`); after a cell that ran, whether a search
runs, is offered or is refused, and why (:class:`AfterSuccess`); once the retries are over, how
the cell ends (:class:`Ending`). "Fixed?" is the verdict's (:mod:`.verdict`), read here once.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ..diagnosis import Kind
from ..protocol import RetryVerdict
from .attempts import CellRetry
from .outcome import Ending
from .probe import FitWatch
from .settings import RetrySettings
from .verdict import FIXED, STOPPED, verdict_of


class SearchRefusal(enum.Enum):
    """Why a ``--find-max`` cell that ran searches for nothing (``shell/`` says it in a line)."""

    FIT_CUT = "fit_cut"  # its fit did not end, though the cell raised nothing


@dataclass(frozen=True)
class CellEnd:
    """What the finished run of a guarded cell showed, as far as the decisions need it."""

    failed: bool  # the cell raised
    stopped_in_finish: bool  # the person's Stop landed in the guard's own finish
    find_max: bool  # ``--find-max``
    auto_runs: int  # attempts it may make by itself (``--auto-retry``)
    saw_fit: bool = False  # a Keras ``fit`` of the cell's began
    fits_ended: bool = True  # and every one that began ran to its end
    live: bool = False  # a frontend that shows cards under cells (a notebook)
    free_memory_on_oom: bool = True  # ``GPUGuard.free_memory_on_oom``

    @classmethod
    def of(
        cls,
        settings: RetrySettings,
        watch: FitWatch | None,
        failed: bool,
        stopped_in_finish: bool,
        live: bool,
        free_memory_on_oom: bool,
    ) -> CellEnd:
        """The end of a cell run with ``settings``, whose ``fit`` calls ``watch`` noted."""
        return cls(
            failed=failed,
            stopped_in_finish=stopped_in_finish,
            find_max=settings.find_max,
            auto_runs=settings.auto_runs,
            saw_fit=watch is not None and watch.saw_fit,
            fits_ended=watch is None or watch.all_ended,
            live=live,
            free_memory_on_oom=free_memory_on_oom,
        )


@dataclass(frozen=True)
class AfterFailure:
    """What the guard does about a failed cell: its card, a retry's plan, freeing its memory,
    and retries by themselves."""

    card: bool
    plan_retry: bool
    free_memory: bool
    auto: bool


@dataclass(frozen=True)
class AfterSuccess:
    """What follows a cell that ran: a search run now, offered on a card, or neither (and
    why, when ``--find-max`` asked for one)."""

    search: bool = False
    offer: bool = False
    stopped: bool = False  # the person's Stop kept the search from starting
    refused: SearchRefusal | None = None


def keeps_models_before(settings: RetrySettings) -> bool:
    """Whether a cell's run keeps the models of earlier cells as its ``fit`` begins: when a
    retry or a search may follow by itself, which puts them back before its whole runs."""
    return settings.retries_by_itself


def plans_retry(kind: Kind) -> bool:
    """Whether a failure of ``kind`` is one a smaller batch may fix (and whose memory is freed
    after a retry's attempt)."""
    return kind is Kind.OUT_OF_MEMORY


def after_failure(end: CellEnd, kind: Kind, can_retry: bool) -> AfterFailure:
    """A failure the diagnosis calls ``kind``; ``can_retry``: its batch size can be changed.

    An error no rule recognises gets no card (the frozen panel above the traceback is enough);
    an out-of-memory error plans a retry, frees what the failure pinned when the settings say so
    or before a retry runs by itself, which it does with ``--auto-retry`` unless the person's
    Stop came as the guard finished the cell.
    """
    out_of_memory = plans_retry(kind)
    auto = out_of_memory and can_retry and end.auto_runs > 0 and not end.stopped_in_finish
    return AfterFailure(
        card=kind is not Kind.UNKNOWN,
        plan_retry=out_of_memory,
        free_memory=out_of_memory and (end.free_memory_on_oom or auto),
        auto=auto,
    )


def after_success(end: CellEnd) -> AfterSuccess:
    """A cell that ran: ``--find-max`` searches now (unless the person's Stop came first, or
    its ``fit`` was cut by an error it caught: then no size is known to fit); a notebook cell
    that trained a Keras model is offered the search."""
    if end.find_max and end.stopped_in_finish:
        return AfterSuccess(stopped=True)
    if not end.fits_ended:
        return AfterSuccess(refused=SearchRefusal.FIT_CUT if end.find_max else None)
    if end.find_max:
        return AfterSuccess(search=True)
    return AfterSuccess(offer=end.saw_fit and end.live)


def ending(retry: CellRetry | None) -> Ending:
    """How the cell ends once the guard's retries of it are over: stopped when the person's
    Stop reached one, fixed when the verdict says so, else as it ran."""
    verdict = verdict_of(retry)
    if verdict is not None and verdict.state == STOPPED:
        return Ending.STOPPED
    return Ending.FIXED if fixes(verdict) else Ending.AS_RAN


def fixes(verdict: RetryVerdict | None) -> bool:
    """Whether a retry's verdict is that the cell is fixed: the one place that reads it so."""
    return verdict is not None and verdict.state == FIXED


def fixed_size(retry: CellRetry | None) -> int | None:
    """The batch size that fixed the cell, for its incident; ``None`` when none did."""
    verdict = verdict_of(retry)
    return verdict.batch_size if ending(retry) is Ending.FIXED and verdict is not None else None


def stopped_in_the_guard(end: CellEnd) -> Ending:
    """The person's Stop landed in the guard's own steps after the cell: the retries or the
    search that were to run by themselves end there, as the cell does; where none were to, the
    cell's own result stands."""
    return Ending.STOPPED if end.auto_runs > 0 else Ending.AS_RAN


def state_outcome(failed: bool, how: Ending) -> str:
    """How the kernel's state file records the cell: ``error``, ``fixed`` or ``ok``."""
    if how is Ending.STOPPED or (failed and how is not Ending.FIXED):
        return "error"
    return "fixed" if failed else "ok"
