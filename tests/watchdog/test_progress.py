"""Steps, phases and the stall limit that follows from them."""

from __future__ import annotations

import pytest

from ipy_gpuguard.watchdog import StallLimits, StepRecorder
from ipy_gpuguard.watchdog.limits import ADAPTIVE_FLOOR_S


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_first_step_of_a_phase_is_left_out_of_the_pace():
    clock = Clock()
    steps = StepRecorder(clock)
    steps.begin_phase("fit")
    assert steps.snapshot().first_step_pending
    clock.now += 40.0  # tracing and compiling
    steps.step()
    for _ in range(3):
        clock.now += 0.5
        steps.step()
    progress = steps.snapshot()
    assert progress.steps == 4
    assert progress.step_times == (0.5, 0.5, 0.5)
    assert progress.last_step_s == 0.5
    assert not progress.first_step_pending
    assert progress.last_progress_at == clock.now


def test_a_validation_phase_gets_its_own_first_step_and_fit_goes_on_after_it():
    clock = Clock()
    steps = StepRecorder(clock)
    steps.begin_phase("fit")
    clock.now += 1
    steps.step()
    steps.begin_phase("evaluate")
    assert steps.snapshot().phase == "evaluate"
    assert steps.snapshot().first_step_pending
    clock.now += 9  # the evaluation function is traced
    steps.step()
    steps.end_phase()
    progress = steps.snapshot()
    assert progress.phase == "fit"
    assert not progress.first_step_pending
    assert progress.last_progress_at == clock.now


def test_heartbeats_without_a_phase_never_get_the_first_step_allowance():
    steps = StepRecorder(Clock())
    assert not steps.snapshot().first_step_pending
    limits = StallLimits(timeout_s=2.0, first_step_s=120.0)
    assert limits.limit_s(steps.snapshot()) == 2.0


@pytest.mark.parametrize(
    ("timeout", "pace", "first", "expected"),
    [
        (2.0, [0.5] * 5, False, 2.0),  # the person's timeout
        (2.0, [], True, 120.0),  # a first step may compile for longer
        (None, [], False, ADAPTIVE_FLOOR_S),  # no pace yet: the floor
        (None, [0.1] * 5, False, ADAPTIVE_FLOOR_S),  # fast steps: still the floor
        (None, [6.0] * 5, False, 60.0),  # slow steps: ten times the median
    ],
)
def test_the_limit(timeout, pace, first, expected):
    clock = Clock()
    steps = StepRecorder(clock)
    steps.begin_phase("fit")
    if not first:
        steps.step()
        for seconds in pace:
            clock.now += seconds
            steps.step()
    assert StallLimits(timeout, first_step_s=120.0).limit_s(steps.snapshot()) == expected


def test_heartbeat_feeds_the_active_recorder_only():
    import ipy_gpuguard
    from ipy_gpuguard.watchdog import set_active

    steps = StepRecorder()
    ipy_gpuguard.heartbeat()  # no guarded cell: nothing happens
    set_active(steps)
    try:
        ipy_gpuguard.heartbeat()
        ipy_gpuguard.heartbeat()
    finally:
        set_active(None)
    ipy_gpuguard.heartbeat()
    assert steps.steps == 2
