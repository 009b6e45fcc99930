"""How long a cell may go without progress before the watchdog calls it stalled."""

from __future__ import annotations

from dataclasses import dataclass

from .progress import ProgressSnapshot

#: The adaptive limit: this many times the median step, and never less than the floor.
ADAPTIVE_FACTOR = 10.0
ADAPTIVE_FLOOR_S = 30.0
#: What the first step of ``fit``, ``evaluate`` or ``predict`` may take: it traces the
#: function and, with XLA, compiles it, which can take minutes for a large model.
FIRST_STEP_ALLOWANCE_S = 120.0


@dataclass(frozen=True)
class StallLimits:
    """The limit without progress: ``timeout_s`` when the person set one, else adaptive.

    Adaptive means ten times the median step (a training loop that slows down tenfold is
    worth a look), at least thirty seconds. The first step of a Keras phase gets at least
    ``first_step_s`` whatever the limit, so compilation is never taken for a hang.
    """

    timeout_s: float | None = None
    first_step_s: float = FIRST_STEP_ALLOWANCE_S

    def limit_s(self, progress: ProgressSnapshot) -> float:
        if self.timeout_s is not None:
            limit = self.timeout_s
        else:
            median = progress.median_step_s
            limit = max(ADAPTIVE_FLOOR_S, ADAPTIVE_FACTOR * median if median else 0.0)
        return max(limit, self.first_step_s) if progress.first_step_pending else limit
