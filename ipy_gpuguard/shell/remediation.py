"""Carrying out what the guard decided about a failed cell: diagnose, show the card, free
memory, retry, record the incident. What to do is :func:`~ipy_gpuguard.retry.aftermath.
after_failure`'s, how the cell ends :func:`~ipy_gpuguard.retry.aftermath.ending`'s.

Runs from ``post_run_cell``: the traceback has been shown and the ``except`` block left, so
clearing the frames of the failed call really releases what they held.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..cards import PENDING, CardParts, reclaim_of
from ..cards.forecast_words import forecast_notes
from ..diagnosis import Context, Diagnosis, Kind, diagnose
from ..diagnosis.stack import stack_of_modules
from ..record import FailedRun, Reclaimed, in_one_line
from ..retry import RetryRequest, RunOutcome
from ..retry.aftermath import CellEnd, after_failure, ending, fixed_size, plans_retry
from ..retry.outcome import Ending
from .actions import LiveCard
from .incidents import Incident, IncidentLog
from .reclaim import free_failure_memory

DEBUG_NOTE = (
    "%debug has nothing to inspect: the failed call's frames were cleared to free their memory "
    "(%config GPUGuard.free_memory_on_oom = False keeps them)."
)

#: Shows a card: the diagnosis, its notes, its changing part, and how to free memory later.
Present = Callable[[Diagnosis, tuple[str, ...], CardParts, Callable[[], Reclaimed]], LiveCard]


@dataclass(frozen=True)
class Remediated:
    """What came of a failure: its diagnosis, and how the cell ends."""

    diagnosis: Diagnosis
    ending: Ending = Ending.AS_RAN


@dataclass(frozen=True)
class Policy:
    """Where the incident goes (from ``GPUGuard``)."""

    incident_log: IncidentLog | None
    log_cell_source: bool


@dataclass(frozen=True)
class Failure:
    """The failed cell: its options (for the incident log), its source and its id."""

    options: Mapping[str, Any]
    cell: str
    cell_id: str | None = None


def remediate(
    error: BaseException,
    run: FailedRun,
    end: CellEnd,
    policy: Policy,
    failure: Failure,
    previous_kind: Kind | None,
    plan_retry: Callable[[Diagnosis], RetryRequest | None],
    present: Present,
) -> Remediated:
    """Diagnose ``error`` and do what :func:`after_failure` decides: show the card, free what
    the error pinned, retry by itself; then log the incident."""
    context = _context(run, previous_kind)
    diagnosis = diagnose(error, context)
    request = plan_retry(diagnosis) if plans_retry(diagnosis.kind) else None
    retry = request.retry if request is not None else None
    decided = after_failure(end, diagnosis.kind, retry is not None)
    if not decided.card:
        return Remediated(diagnosis)
    parts = CardParts(
        reclaimed=PENDING if decided.free_memory else None, request=request, can_free_memory=True
    )
    # The card first: freeing can take seconds (clear_session took 4.3 s on PyTorch on an H100).
    failed = FailureMark.of(error)  # what the card's button frees, without keeping it alive
    notes = (
        *forecast_notes(diagnosis.kind, run.forecast),
        *((DEBUG_NOTE,) if decided.free_memory else ()),
    )
    live = present(diagnosis, notes, parts, lambda: free_memory_now(run, failed))
    reclaimed = None
    if decided.free_memory:
        reclaimed = free_failure_memory(error, run.read_allocator, run.allocator_baseline_bytes)
        message = live.freed(reclaimed)
        live.display.show(live.card, message)
    del error  # nothing below needs it, and it holds the traceback
    if decided.auto and request is not None:
        settings = request.settings
        live.retry(None, settings.auto_runs, settings.find_max, None)
        live.display.show(live.card, live.verdict_message())
    how = ending(retry)
    if how is Ending.STOPPED:
        print(
            "ipy_gpuguard: the retries stopped at your interrupt; no further one runs",
            file=sys.stderr,
        )
    fixed_at = fixed_size(retry)
    if policy.incident_log is not None:
        live.in_the_log = policy.incident_log.append(
            Incident.of(
                diagnosis,
                failure.options,
                incident_outcome(reclaimed is not None, fixed_at),
                context.environment,  # already cut to the allow-list
                failure.cell if policy.log_cell_source else None,
                failure.cell_id,
                live.base.id,
            )
        )
    return Remediated(diagnosis, how)


def attempt_failed(
    error: BaseException,
    run: FailedRun,
    ran: RunOutcome,
    previous_kind: Kind | None,
    measured: bool = False,
) -> RunOutcome:
    """How a retry's attempt that ``ran`` failed (``measured``: one of the guard's own
    measurements); its memory is freed when it ran out, for the next one."""
    failed = replace(ran, error=in_one_line(error, limit=200))
    diagnosis = diagnose(error, _context(run, previous_kind))
    if not plans_retry(diagnosis.kind):
        return failed
    fraction = diagnosis.facts.get("fit_fraction")
    reclaimed = free_failure_memory(
        error, run.read_allocator, run.allocator_baseline_bytes, thorough=not measured
    )
    return replace(
        failed,
        out_of_memory=True,
        fit_fraction=fraction if isinstance(fraction, float) else None,
        allocator_after_bytes=reclaimed.after_bytes,
        reclaimed=reclaim_of(reclaimed),
    )


def _context(run: FailedRun, previous_kind: Kind | None) -> Context:
    return replace(
        Context.of_this_process(),
        log_lines=run.log_lines,
        devices=run.devices,
        previous_kind=previous_kind,
        gpu_initialised=run.settings.gpu_initialised,
        memory_growth=run.settings.memory_growth,
        xla=run.settings.xla_auto_jit,
        hang=run.hang,
        watchdog_interrupted=run.watchdog_interrupted,
        frameworks=stack_of_modules(tuple(sys.modules)).frameworks,
    )


def incident_outcome(freed: bool, fixed_at: int | None) -> str:
    """How an incident ended, as ``%gpuguard history`` lists it."""
    if fixed_at is not None:
        return f"fixed by retry at batch size {fixed_at}"
    return "freed memory" if freed else "card shown"


@dataclass(frozen=True)
class FailureMark:
    """Tells a card's own failure from any other without keeping it alive (exceptions take no
    weak references, and a kept one would pin the memory it is to free): its identity, type
    and message, all three, since a freed object's address is soon another's."""

    identity: int
    kind: type
    message: str

    @classmethod
    def of(cls, error: BaseException) -> FailureMark:
        return cls(id(error), type(error), str(error))

    def marks(self, error: object) -> bool:
        return (
            id(error) == self.identity and type(error) is self.kind and str(error) == self.message
        )


def free_memory_now(run: FailedRun, failed: FailureMark) -> Reclaimed:
    """The card's "Free GPU memory": clear its own failure's frames where IPython still holds it
    for ``%debug``, then Keras' state, and collect. A later, unrelated error is the person's,
    and left alone; a failure nobody holds any more is collected."""
    last = getattr(sys, "last_value", None)
    own = last if last is not None and failed.marks(last) else None
    return free_failure_memory(own, run.read_allocator, run.allocator_baseline_bytes)
