"""What the guard does after a guarded cell failed: diagnose, free memory, record, show the card.

Runs from ``post_run_cell``: the traceback has been shown and the ``except`` block left, so
clearing the frames of the failed call really releases what they held.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from IPython.display import display

from .diagnosis import Context, DeviceMemory, Diagnosis, Kind, diagnose
from .incidents import Incident, IncidentLog
from .reclaim import free_failure_memory
from .telemetry.framework import FrameworkSettings
from .ui.card import RemediationCard, StaticCard
from .ui.card_render import CardView, reclaimed_text
from .ui.view import PanelView

DEBUG_NOTE = (
    "%debug has nothing to inspect: the failed call's frames were cleared to free their memory "
    "(%config GPUGuard.free_memory_on_oom = False keeps them)."
)


@dataclass(frozen=True)
class FailedRun:
    """What the guard saw of the failed cell, without the exception."""

    panel: PanelView
    devices: tuple[DeviceMemory, ...]
    log_lines: tuple[str, ...]
    read_allocator: Callable[[], int | None]
    allocator_baseline_bytes: int | None
    settings: FrameworkSettings


@dataclass(frozen=True)
class Policy:
    """The settings that decide what happens after a failure (from ``GPUGuard``)."""

    free_memory_on_oom: bool
    incident_log: IncidentLog | None
    log_cell_source: bool
    live: bool


def remediate(
    error: BaseException,
    run: FailedRun,
    policy: Policy,
    options: Mapping[str, Any],
    cell: str,
    previous_kind: Kind | None,
) -> Diagnosis:
    """Diagnose ``error``, free what it pinned when it is out of memory, log it, show the card.

    Returns the diagnosis (its kind is the next failure's ``previous_kind``). An error that
    no rule recognises gets no card: the frozen panel above the traceback is enough.
    """
    context = replace(
        Context.of_this_process(),
        log_lines=run.log_lines,
        devices=run.devices,
        previous_kind=previous_kind,
        gpu_initialised=run.settings.gpu_initialised,
        memory_growth=run.settings.memory_growth,
        xla=run.settings.xla_auto_jit,
    )
    diagnosis = diagnose(error, context)
    if diagnosis.kind is Kind.UNKNOWN:
        return diagnosis
    reclaimed = None
    notes: tuple[str, ...] = ()
    if diagnosis.kind is Kind.OUT_OF_MEMORY and policy.free_memory_on_oom:
        reclaimed = free_failure_memory(error, run.read_allocator, run.allocator_baseline_bytes)
        notes = (DEBUG_NOTE,)
    del error  # nothing below needs it, and it holds the traceback
    if policy.incident_log is not None:
        outcome = "freed memory" if reclaimed is not None else "card shown"
        policy.incident_log.append(
            Incident.of(
                diagnosis,
                options,
                outcome,
                context.environment,  # already cut to the allow-list
                cell if policy.log_cell_source else None,
            )
        )
    card = CardView(diagnosis, reclaimed, run.panel if run.panel.history else None, notes)
    if policy.live:
        actions = {"free_memory": lambda: free_memory_now(run)}
        display(RemediationCard(card, actions))
    else:
        display(StaticCard(card))
    return diagnosis


def free_memory_now(run: FailedRun) -> str:
    """The card's "Free GPU memory": clear the last error's frames, Keras' state, collect."""
    last = getattr(sys, "last_value", None)
    reclaimed = free_failure_memory(last, run.read_allocator, run.allocator_baseline_bytes)
    return reclaimed_text(reclaimed)
