"""What a GPU's utilisation during a stall says: busy in one long kernel, or idle and waiting.

A judgement of the evidence, made here so that every renderer (the live hang card, the frozen
summary, the diagnosis' evidence) draws the same conclusion from the same figures.
"""

from __future__ import annotations

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
