"""The words of a stall: how long, where the cell waits, what the GPU did, what the person can
do. The hang card, the live panel, the frozen summary and the diagnosis' evidence say the same
sentences, worded here once from the watchdog's record.
"""

from __future__ import annotations

import statistics

from ..diagnosis import REMEDIES
from ..diagnosis.remedies import STEP_TIMEOUT_REMEDIES
from ..record import PanelView, WatchView
from ..watchdog import (
    RAISED,
    SIGNALLED,
    STUCK,
    GpuDuringStall,
    HangEvidence,
    Stall,
    ThreadStack,
)
from ..watchdog.judgement import BUSY, IDLE, gpu_state

_MEANINGS = {
    BUSY: " (busy: one very long GPU kernel, or a GPU stuck in one)",
    IDLE: " (idle: the GPU is waiting, for the input pipeline or a lock)",
}


def duration_text(seconds: float) -> str:
    """``120 ms``, ``1.4 s``, ``95 s``."""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"


def stall_title(watch: WatchView, stall: Stall | None = None) -> str:
    """``No progress for 12 s (limit 10 s)``: the stall going on, or ``stall`` once it ended."""
    stall = stall or watch.stall
    assert stall is not None
    until = stall.resumed_at if stall.resumed_at is not None else watch.now
    return _no_progress_text(until - stall.started_at, stall.limit_s)


def _no_progress_text(stalled_s: float, limit_s: float) -> str:
    return f"No progress for {duration_text(stalled_s)} (limit {duration_text(limit_s)})"


def stall_ending(view: PanelView) -> str:
    """How a stall still going on when the cell ended came to its end."""
    watch = view.watch
    if watch is not None and watch.interrupt is not None:
        return "interrupted by the guard's stall watchdog"
    if view.ended_with == "KeyboardInterrupt":
        return "interrupted (the stop button, or Interrupt)"
    if view.ended_with:
        return f"the cell failed ({view.ended_with}) while stalled"
    return "still stalled when it ended"


def ended_stall_lines(view: PanelView, stall: Stall) -> list[str]:
    """What became of a stall once the cell has ended, in place of what the person can do."""
    if stall.resumed_at is not None:
        finished = view.finished and view.ended_with is None
        return ["The cell went on and finished." if finished else "Progress came back."]
    ending = stall_ending(view)
    return [ending[0].upper() + ending[1:] + "."]


def stall_facts(stall: Stall, gpus: tuple[GpuDuringStall, ...]) -> list[str]:
    """When the stall began, the pace before it, and what the GPU did during it."""
    lines = [_position_text(stall)]
    for gpu in gpus:
        percent = gpu.utilisation_percent
        if gpu.simulated:  # a simulated figure proves nothing about a real GPU
            lines.append(
                f"GPU {gpu.index} utilisation during the stall: {percent:.0f}% (simulated)"
            )
        else:
            lines.append(
                f"GPU {gpu.index} utilisation during the stall: {percent:.0f}%{_meaning(percent)}"
            )
    return lines


def where_lines(threads: tuple[ThreadStack, ...]) -> list[str]:
    """Each thread's own frames (the last three), the library call and the line it waits on."""
    lines = []
    for thread in threads:
        lines.append("main thread:" if thread.is_main else f"{thread.name}, running your code:")
        hidden = len(thread.user_frames) - 3
        if hidden > 0:
            lines.append(f"  ... {hidden} outer frame{'s' * (hidden != 1)}")
        lines += [f"  {frame}" for frame in thread.user_frames[-3:]]
        if thread.calls_into:
            library = "the standard library" if thread.calls_into == "python" else thread.calls_into
            lines.append(f"  -> inside {library}")
        if thread.waits_in is not None:
            lines.append(f"  waits in {thread.waits_in}")
    return lines


#: Seconds within which a Stop lands where it can (at the main thread's next bytecode): one
#: the stall outlives by this much did not land.
STOP_LANDS_WITHIN_S = 2.0


def stop_not_landed(watch: WatchView) -> float | None:
    """Seconds since the person's Stop came, when the stall outlived it: it did not land."""
    sent = watch.stop_sent_at
    if watch.stall is None or sent is None or watch.now - sent < STOP_LANDS_WITHIN_S:
        return None
    return watch.now - sent


def _not_landed_lines(watch: WatchView, since_s: float) -> list[str]:
    stall = watch.stall
    worker = stall.where.worker if stall is not None else None
    waits = (
        "waits inside the framework for the thread that runs your code"
        if worker is not None
        else "is inside one native call that Python cannot stop (a long wait in a library)"
    )
    lines = [
        f"The interrupt was sent {duration_text(since_s)} ago and has not landed: the main "
        f"thread {waits}.",
        "Restart the kernel (Kernel > Restart); nothing inside the kernel can stop it.",
    ]
    if worker is not None and not watch.interrupting:
        lines.append("Next time, %%gpuguard --on-hang interrupt raises in that thread.")
    return lines


def action_lines(watch: WatchView) -> list[str]:
    """What the person can do now, what became of their Stop, or what the watchdog's
    interrupt has done."""
    stall = watch.stall
    worker = stall.where.worker if stall is not None else None
    state = watch.interrupt
    since = stop_not_landed(watch)
    if since is not None and (state is None or state.stage == STUCK):
        return _not_landed_lines(watch, since)
    if state is None and not watch.interrupting:
        lines = ["Press the stop button (Interrupt the kernel) to end the cell."]
        if worker is not None:
            lines.append(
                "It may not land while the main thread waits inside the framework for the thread "
                "that runs your code; %%gpuguard --on-hang interrupt raises in that thread."
            )
        lines.append("If nothing stops it, Kernel > Restart is the way out.")
        return lines
    if state is None:
        return ["Interrupting the cell (--on-hang interrupt)..."]
    if state.stage == RAISED:
        return [f"Interrupting the cell (--on-hang interrupt): raised in {state.target}."]
    if state.stage == SIGNALLED:
        return [
            f"The interrupt raised in {state.target} has not landed; sent SIGINT to the main "
            "thread, as the stop button does."
        ]
    assert state.stage == STUCK
    return [
        "The interrupt cannot land: the cell is inside one native call that Python cannot stop "
        "(a long sleep, a lock without a timeout, a GPU wait).",
        "Restart the kernel (Kernel > Restart); nothing inside the kernel can stop it.",
    ]


def terminal_stall_line(watch: WatchView) -> str:
    """A stall in a terminal, said once when it is found: how long, where it waits (the thread
    running the person's code for a library, else the main thread), and what to do."""
    stall = watch.stall
    assert stall is not None
    worker = stall.where.worker
    waiting = worker or next((thread for thread in stall.where.threads if thread.is_main), None)
    where = ""
    if waiting is not None and waiting.user_frames:
        who = "the main thread" if waiting.is_main else f"{waiting.name}, running your code,"
        where = f"; {who} waits at {waiting.user_frames[-1]}"
        if waiting.calls_into:
            where += f" (inside {waiting.calls_into})"
    if worker is not None:
        todo = (
            "Ctrl-C may not land while the main thread waits inside the framework for that "
            "thread: %%gpuguard --on-hang interrupt raises in it; else quit and restart"
        )
    else:
        todo = "Ctrl-C stops it; if it does not land, quit and restart (Ctrl-\\ ends Python)"
    position = _position_text(stall).rstrip(".")
    return (
        f"ipy_gpuguard: {stall_title(watch)}; {position[0].lower()}{position[1:]}{where}. {todo}."
    )


def terminal_not_landed_line(watch: WatchView) -> str:
    """The person's Ctrl-C in a terminal that did not land, in one line."""
    since = stop_not_landed(watch)
    assert since is not None
    return (
        f"ipy_gpuguard: Ctrl-C came {duration_text(since)} ago and has not landed: the main "
        "thread is inside a native call that Python cannot stop. Quit and restart "
        "(Ctrl-\\ ends Python)."
    )


def hang_lines(evidence: HangEvidence) -> tuple[str, ...]:
    """A hang's evidence in words: the last step times before the failure, and the stall."""
    lines = []
    if evidence.step_times:
        lines.append(
            "Last step times before the failure: "
            + ", ".join(duration_text(seconds) for seconds in evidence.step_times)
            + "."
        )
    stall = evidence.stall
    if stall is not None and evidence.stalled_s is not None:
        lines.append(f"{_no_progress_text(evidence.stalled_s, stall.limit_s)}.")
        lines += stall_facts(stall, evidence.gpus)
        lines += where_lines(stall.where.threads)
    if evidence.step_warning:
        lines.append(evidence.step_warning)
    return tuple(lines)


def _position_text(stall: Stall) -> str:
    if stall.phase is None and stall.steps == 0:
        return _unmoved_text(stall.main_waits)
    where = f"after step {stall.steps}" if stall.steps else "before the first step"
    if stall.phase:
        where += f" of {stall.phase}"
    pace = ""
    if stall.last_step_s is not None:
        pace = f"; the last step took {duration_text(stall.last_step_s)}"
    if stall.step_times:
        pace += f", the median {duration_text(statistics.median(stall.step_times))}"
    return f"Stalled {where}{pace}."


def _unmoved_text(waits: int | None) -> str:
    """What the main thread did at the one line it stayed on, as far as was measured."""
    if waits is None:
        return (
            "The main thread has not moved: it was at the same line each time the watchdog looked."
        )
    if waits <= 1:
        return "The main thread has not moved: it is inside one call."
    return (
        f"The main thread keeps waiting at the same line ({waits} waits so far): a loop that "
        "makes no progress, not one long call."
    )


def _meaning(percent: float) -> str:
    state = gpu_state(percent)
    return _MEANINGS[state] if state is not None else ""


def step_timeout_remedies() -> tuple[tuple[str, str], ...]:
    """The catalog's remedies for a step near the GPU's own watchdog: ``(title, why)`` each."""
    return tuple((REMEDIES[name].title, REMEDIES[name].why) for name in STEP_TIMEOUT_REMEDIES)
