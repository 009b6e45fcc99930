"""Heartbeats: the steps a guarded cell makes, recorded from inside its training loop.

The Keras callback and :func:`heartbeat` call :meth:`StepRecorder.step` once per step, so it is
the hot path of the whole guard: no lock, no allocation beyond one float in a bounded deque.
The watchdog thread reads a :meth:`StepRecorder.snapshot`; each field is written by one
statement under the GIL, so a snapshot is at worst one step behind, never torn.
"""

from __future__ import annotations

import statistics
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

#: Steps whose durations the median is taken over: recent enough to follow a change of pace.
RECENT_STEPS = 64


@dataclass(frozen=True)
class ProgressSnapshot:
    """What the cell has done so far, as the watchdog and the panel see it.

    Parameters
    ----------
    last_progress_at
        Clock time of the last step, or of the last start or end of a Keras phase.
    step_times
        Durations of recent steps, the first step of each phase left out: it traces and
        compiles, and says nothing of the pace.
    first_step_pending
        A Keras phase has begun and its first step has not ended: tracing and compilation
        may take far longer than a step.
    """

    steps: int
    last_progress_at: float
    step_times: tuple[float, ...] = ()
    last_step_s: float | None = None
    phase: str | None = None
    first_step_pending: bool = False

    @property
    def median_step_s(self) -> float | None:
        return statistics.median(self.step_times) if self.step_times else None


class StepRecorder:
    """The steps of one guarded cell, and the Keras phase (fit, evaluate, predict) it is in."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock
        self.steps = 0
        self._last_mark = clock()
        self._durations: deque[float] = deque(maxlen=RECENT_STEPS)
        self._last_step_s: float | None = None
        self._first_pending = True  # the first step of the cell or of a phase is not its pace
        self._phase: str | None = None
        self._outer: list[tuple[str | None, bool]] = []

    def step(self) -> None:
        """One step ended (the hot path: about a microsecond)."""
        now = self._clock()
        duration = now - self._last_mark
        self._last_mark = now
        self._last_step_s = duration
        self.steps += 1
        if self._first_pending:
            self._first_pending = False
        else:
            self._durations.append(duration)

    def begin_phase(self, name: str) -> None:
        """Keras began fitting, evaluating or predicting: its first step traces the function."""
        self._outer.append((self._phase, self._first_pending))
        self._phase, self._first_pending = name, True
        self._last_mark = self._clock()

    def end_phase(self) -> None:
        """The phase ended (a validation run inside ``fit`` returns to the training phase)."""
        self._phase, self._first_pending = self._outer.pop() if self._outer else (None, False)
        self._last_mark = self._clock()

    def snapshot(self) -> ProgressSnapshot:
        return ProgressSnapshot(
            steps=self.steps,
            last_progress_at=self._last_mark,
            step_times=tuple(self._durations),
            last_step_s=self._last_step_s,
            phase=self._phase,
            first_step_pending=self._phase is not None and self._first_pending,
        )


_active: StepRecorder | None = None


def heartbeat() -> None:
    """Tell the guard that the running cell made one step of progress.

    Call it once per step of a custom training loop (``for x, y in data: ...; heartbeat()``):
    the panel then shows steps and time per step, and the watchdog knows the loop is alive.
    Keras' ``fit``, ``evaluate`` and ``predict`` need nothing: the guard listens to them itself.
    Outside a guarded cell it does nothing, so the loop runs unchanged without the guard.
    """
    recorder = _active
    if recorder is not None:
        recorder.step()


def set_active(recorder: StepRecorder | None) -> None:
    """Make ``recorder`` the one :func:`heartbeat` feeds (``None``: no guarded cell runs)."""
    global _active
    _active = recorder
