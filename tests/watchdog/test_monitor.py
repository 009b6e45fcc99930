"""The watchdog thread on real threads and real time, with limits of a fraction of a second."""

from __future__ import annotations

import dataclasses
import threading
import time

from ipy_gpuguard.watchdog import (
    RAISED,
    STUCK,
    StallLimits,
    StepRecorder,
    Watchdog,
    WatchdogInterrupt,
    capture_stacks,
)
from ipy_gpuguard.watchdog.stacks import StackReport

LIMIT_S = 0.3


def watchdog(steps, interrupt=False, position=lambda: "still", grace_s=0.2, **kwargs):
    changes = []
    dog = Watchdog(
        steps,
        StallLimits(timeout_s=LIMIT_S),
        interval_s=0.05,
        interrupt_on_stall=interrupt,
        capture_stacks=lambda: StackReport(()),
        on_change=lambda: changes.append(time.perf_counter()),
        grace_s=grace_s,
        position=position,
        **kwargs,
    )
    return dog, changes


def test_steps_keep_it_quiet_and_their_end_is_a_stall_found_at_the_limit():
    steps = StepRecorder()
    dog, changes = watchdog(steps)
    dog.start()
    try:
        for _ in range(10):
            time.sleep(0.1)
            steps.step()
        assert dog.stall is None
        time.sleep(LIMIT_S + 0.2)
        stall = dog.stall
        assert stall is not None
        assert stall.steps == 10
        assert LIMIT_S <= stall.detected_at - stall.started_at < LIMIT_S + 0.05
        assert changes
        steps.step()  # progress again
        time.sleep(0.1)
        assert dog.stall is None
        (past,) = dog.past_stalls
        assert past.resumed_at is not None
    finally:
        dog.stop()
    assert not dog.is_alive()


def test_a_moving_main_thread_is_progress_outside_keras_but_not_inside():
    steps = StepRecorder()
    ticks = iter(range(10**6))
    dog, _ = watchdog(steps, position=lambda: next(ticks))
    dog.start()
    try:
        time.sleep(LIMIT_S + 0.2)
        assert dog.stall is None  # the main thread moves at every look
        steps.begin_phase("fit")
        steps.step()  # past the first step: the allowance no longer applies
        time.sleep(LIMIT_S + 0.2)
        assert dog.stall is not None  # inside fit, only steps count
    finally:
        dog.stop()


def test_the_interrupt_lands_in_a_polling_thread_then_gives_up_on_a_stuck_one():
    landed = []

    def polling():
        try:
            while True:
                time.sleep(0.01)
        except WatchdogInterrupt:
            landed.append(True)

    worker = threading.Thread(target=polling, name="worker", daemon=True)
    worker.start()
    steps = StepRecorder()
    dog = Watchdog(
        steps,
        StallLimits(timeout_s=LIMIT_S),
        interval_s=0.05,
        interrupt_on_stall=True,
        capture_stacks=lambda: _report_with_worker(worker),
        grace_s=0.2,
        position=lambda: "still",
    )
    dog.start()
    try:
        worker.join(timeout=5)
        assert landed == [True]
        assert dog.interrupt is not None
        assert dog.interrupt.stage == RAISED
        assert "worker running polling()" in dog.interrupt.target
    finally:
        dog.stop()  # withdraws the pending interrupt of the main thread, if it was sent


def _report_with_worker(worker):
    report = capture_stacks()
    assert any(thread.ident == worker.ident for thread in report.threads)
    threads = tuple(
        dataclasses.replace(thread, run_by_library=thread.ident == worker.ident)
        for thread in report.threads
    )
    return StackReport(threads)


def test_an_interrupt_that_cannot_land_ends_in_the_stuck_stage(monkeypatch):
    from ipy_gpuguard.watchdog import interrupt

    monkeypatch.setattr(interrupt, "raise_in_thread", lambda ident: True)
    monkeypatch.setattr(interrupt, "signal_main_thread", lambda: True)
    dog, _ = watchdog(StepRecorder(), interrupt=True, grace_s=0.1)
    dog.start()
    try:
        time.sleep(LIMIT_S + 0.6)
        assert dog.interrupt is not None
        assert dog.interrupt.stage == STUCK
    finally:
        dog.stop()


def test_a_stall_counts_the_main_threads_waits_since_it_last_moved():
    """Issue 21: a loop of 0.5 s sleeps was called "inside one call"."""
    import itertools

    counter = itertools.count()
    dog, _ = watchdog(StepRecorder(), waits=lambda: next(counter))
    dog.start()
    try:
        deadline = time.perf_counter() + 5
        # Each look of the watchdog reads one more wait: it stops at 2 looks into the stall
        # (stopping at the first wait seen raced with the second look on a busy machine).
        while (
            dog.stall is None or (dog.stall.main_waits or 0) < 2
        ) and time.perf_counter() < deadline:
            time.sleep(0.02)
    finally:
        dog.stop()
    assert dog.stall is not None
    assert dog.stall.main_waits >= 2


def test_the_card_says_what_the_waits_show():
    from ipy_gpuguard.cards.stall import stall_facts
    from ipy_gpuguard.watchdog import Stall

    def first_fact(waits):
        stall = Stall(1.0, 3.0, 2.0, 0, None, (), None, StackReport(()), main_waits=waits)
        return stall_facts(stall, ())[0]

    assert first_fact(0) == "The main thread has not moved: it is inside one call."
    assert first_fact(6).startswith("The main thread keeps waiting at the same line (6 waits")
    assert first_fact(None) == (  # not measured: only what was seen
        "The main thread has not moved: it was at the same line each time the watchdog looked."
    )


def test_a_cell_whose_code_has_ended_is_not_stalled_while_ipython_shows_its_end():
    """Issue 22 item 19: the person's interrupt ended a fit of 0.05 s steps; while IPython
    formatted Keras' long traceback (seconds on a busy machine), no step came for longer than
    ``--timeout`` and the watchdog filled a hang card."""
    steps = StepRecorder()
    where = ["in the cell"]
    dog, changes = watchdog(steps, position=lambda: where[0])
    dog.start()
    try:
        steps.begin_phase("fit")
        for _ in range(5):
            time.sleep(0.05)
            steps.step()
        time.sleep(0.1)  # a look sees the main thread in the cell
        where[0] = None  # the interrupt unwound the cell: IPython shows its traceback
        time.sleep(LIMIT_S + 0.3)
        assert dog.stall is None
        assert not changes
    finally:
        dog.stop()
