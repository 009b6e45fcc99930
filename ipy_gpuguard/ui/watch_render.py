"""The watchdog's findings as text and escaped HTML: progress, the hang card, the TDR warning.

Pure functions of a :class:`.view.PanelView`, like :mod:`.render`: the live panel, the frozen
summary, the terminal and the diagnosis' evidence all read the same lines.
"""

from __future__ import annotations

from html import escape

from ..cards.stall import (
    action_lines,
    duration_text,
    stall_ending,
    stall_facts,
    stall_title,
    step_timeout_remedies,
    where_lines,
)
from ..record import PanelView
from ..watchdog import ProgressSnapshot

_AMBER = "#b26a00"


def progress_text(progress: ProgressSnapshot, running: bool = True) -> str | None:
    """``120 steps · 8.3 steps/s · 120 ms/step · fit``; ``None`` before anything reports steps.

    The phase is named only while the cell runs: a ``fit`` that raised never said it ended.
    """
    if progress.steps == 0 and progress.phase is None:
        return None
    parts = [f"{progress.steps} step{'s' * (progress.steps != 1)}"]
    median = progress.median_step_s
    if median:
        parts += [f"{1 / median:.1f} steps/s", f"{duration_text(median)}/step"]
    if progress.phase and running:
        first = " (first step: tracing and compiling)" if progress.first_step_pending else ""
        parts.append(progress.phase + first)
    return " · ".join(parts)


def hang_card_html(view: PanelView) -> str:
    """The live hang card, filled while the cell still runs; empty when there is no stall."""
    watch = view.watch
    if watch is None or watch.stall is None or view.stall_as_card:
        return ""
    facts = "".join(
        f"<li>{escape(line)}</li>"
        for line in stall_facts(watch.stall, view.gpus_during(watch.stall))
    )
    where = escape("\n".join(where_lines(watch.stall.where.threads)))
    actions = "".join(f"<div>{escape(line)}</div>" for line in action_lines(watch))
    return (
        f'<div class="ipy-gpuguard-hang" style="border-left:4px solid {_AMBER};padding:4px 8px">'
        f"<b>{escape(stall_title(watch))}</b><ul>{facts}</ul>"
        f'<pre style="font-size:11px;margin:0">{where}</pre>'
        f'<div style="margin-top:4px">{actions}</div></div>'
    )


def timeout_warning_html(warning: str) -> str:
    """The TDR warning with the catalog's remedies for it."""
    remedies = "".join(
        f"<li><b>{escape(title)}</b>: {escape(why)}</li>" for title, why in step_timeout_remedies()
    )
    return (
        f'<div class="ipy-gpuguard-tdr" style="color:{_AMBER}"><b>{escape(warning)}</b>'
        f"<ul>{remedies}</ul></div>"
    )


def timeout_warning_lines(warning: str) -> list[str]:
    return [warning, *(f"  - {title}" for title, _ in step_timeout_remedies())]


def summary_lines(view: PanelView) -> list[str]:
    """The frozen panel's lines: progress, each stall in one line, the TDR warning."""
    watch = view.watch
    if watch is None:
        return []
    lines = []
    progress = progress_text(watch.progress, running=not view.finished)
    if progress:
        lines.append(progress)
    for stall in watch.past_stalls:
        assert stall.resumed_at is not None
        lines.append(
            f"stalled for {duration_text(stall.resumed_at - stall.started_at)} at "
            f"{duration_text(watch.elapsed_at(stall.started_at))}, then went on"
        )
    if watch.stall is not None:
        lines.append(f"{stall_title(watch)}; {stall_ending(view)}")
        if not view.stall_as_card:  # the card shows where it waited
            lines += where_lines(watch.stall.where.threads)
    if watch.step_warning:
        lines += timeout_warning_lines(watch.step_warning)
    return lines
