"""The evidence of a hang as data, and what a GPU's utilisation during a stall says: busy in
one long kernel, or idle and waiting.

A judgement of the evidence, made here so that the diagnosis (which remedies apply) and every
card (the live hang card, the frozen summary, the diagnosis' evidence, worded in ``cards/``)
draw the same conclusion from the same figures.
"""

from __future__ import annotations

from dataclasses import dataclass

from .monitor import Stall

#: Utilisation during a stall at or above which the GPU is busy in one long kernel, and at or
#: below which it is waiting for work (percent).
BUSY_PERCENT, IDLE_PERCENT = 90, 10
BUSY, IDLE = "busy", "idle"


def gpu_state(utilisation_percent: float) -> str | None:
    """``busy``, ``idle``, or ``None`` when the utilisation says neither."""
    if utilisation_percent >= BUSY_PERCENT:
        return BUSY
    if utilisation_percent <= IDLE_PERCENT:
        return IDLE
    return None


@dataclass(frozen=True)
class GpuDuringStall:
    """One GPU's mean utilisation over a stall; a simulated device's figure proves nothing."""

    index: int
    utilisation_percent: float
    simulated: bool


@dataclass(frozen=True)
class HangEvidence:
    """What the guard saw of a cell that hung: the step times before it, the stall if there was
    one (where the main thread was and how often it waited), how long it lasted, what each GPU
    did during it, and the warning of the GPU's own watchdog (a step near its limit)."""

    step_times: tuple[float, ...]
    stall: Stall | None = None
    stalled_s: float | None = None
    gpus: tuple[GpuDuringStall, ...] = ()
    step_warning: str | None = None

    @property
    def gpu_state(self) -> str | None:
        """``busy`` or ``idle`` when every real GPU watched agreed during the stall."""
        states = {gpu_state(gpu.utilisation_percent) for gpu in self.gpus if not gpu.simulated}
        return states.pop() if len(states) == 1 else None
