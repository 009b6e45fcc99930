"""The watchdog thread: notices a cell that stopped making progress, and interrupts it if asked.

Progress is a step (the Keras callback, :func:`.heartbeat`) or, outside Keras' loops, the main
thread moving to another frame or line. The thread wakes at the deadline (so a stall is seen
within milliseconds of the limit, not a sampling interval later) and every ``interval_s`` to
look at the main thread. It never prints and never raises: what it finds is kept on the object
and announced through ``on_change``, which updates widgets made on the main thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from . import interrupt
from .limits import StallLimits
from .progress import StepRecorder
from .stacks import StackReport, main_thread_position, main_thread_waits

#: Interrupt stages, in order: raised in a thread, SIGINT sent, gave up (a restart is needed).
RAISED, SIGNALLED, STUCK = "raised", "signalled", "stuck"


@dataclass(frozen=True)
class Stall:
    """A stretch without progress longer than the limit.

    ``started_at`` is the clock time of the last progress; ``resumed_at`` is set when progress
    came back while the cell still ran.
    """

    started_at: float
    detected_at: float
    limit_s: float
    steps: int
    phase: str | None
    step_times: tuple[float, ...]
    last_step_s: float | None
    where: StackReport
    resumed_at: float | None = None
    #: Times the main thread blocked since it last moved (``None``: not measured here).
    main_waits: int | None = None


@dataclass(frozen=True)
class InterruptState:
    """How far the watchdog's interrupt has got; ``target`` says where it was raised, in words."""

    stage: str
    target: str
    sent_at: float
    stage_at: float


class Watchdog:
    """One guarded cell's watchdog thread.

    Parameters
    ----------
    capture_stacks
        Reads where the threads are, when a stall is found.
    on_change
        Called from the thread when a stall begins, goes on, ends, or the interrupt moves on.
    on_look
        Called at every look (the Keras hooks attach to a Keras the cell has just imported).
    grace_s
        How long an interrupt may take to land before the next, stronger one.
    position
        Where the main thread is; ``None`` when it is outside the cell's code, which is no
        move (an interrupt unwinding into IPython's traceback is not progress).
    stop_heard
        When the person's last Stop (SIGINT) came, on this clock, whether or not it landed.
    """

    def __init__(
        self,
        recorder: StepRecorder,
        limits: StallLimits,
        interval_s: float,
        interrupt_on_stall: bool,
        capture_stacks: Callable[[], StackReport],
        on_change: Callable[[], None] = lambda: None,
        on_look: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.perf_counter,
        grace_s: float = 2.0,
        position: Callable[[], object] = main_thread_position,
        waits: Callable[[], int | None] = main_thread_waits,
        stop_heard: Callable[[], float | None] = lambda: None,
    ) -> None:
        self._recorder = recorder
        self.limits = limits
        self._interval_s = interval_s
        self._interrupt_on_stall = interrupt_on_stall
        self._capture_stacks = capture_stacks
        self._on_change = on_change
        self._on_look = on_look
        self._clock = clock
        self._grace_s = grace_s
        self._position = position
        self._waits = waits
        self._stop_heard = stop_heard
        #: When the person's Stop came during the stall going on (it has not landed: the stall
        #: goes on); ``None`` when none came.
        self.stop_sent_at: float | None = None
        self._waits_at_move: int | None = None
        self.started_at = clock()
        self._moved_at = self.started_at
        self._last_position: object = None
        self.stall: Stall | None = None
        self.past_stalls: list[Stall] = []
        self.interrupt: InterruptState | None = None
        self._interrupted: list[int] = []
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ipy_gpuguard-watchdog", daemon=True)

    @property
    def now(self) -> float:
        return self._clock()

    @property
    def stalls(self) -> tuple[Stall, ...]:
        """Every stall of the cell, the current one last."""
        return (*self.past_stalls, *((self.stall,) if self.stall else ()))

    def start(self) -> None:
        self.started_at = self._moved_at = self._clock()
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread, and withdraw an interrupt that has not landed yet."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        for ident in self._interrupted:
            interrupt.withdraw(ident)

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def cell_finished(self) -> None:
        """The cell ended by itself: a stall still open then was a slow stretch that ended with
        the cell, not a hang (call after :meth:`stop`)."""
        if self.stall is not None and self.interrupt is None:
            self.past_stalls.append(replace(self.stall, resumed_at=self._clock()))
            self.stall = None

    def _run(self) -> None:
        next_look = self._clock()
        while not self._stop.is_set():
            now = self._clock()
            try:
                if now >= next_look:
                    self._look(now)
                    next_look = now + self._interval_s
                deadline = self._check(now)
            except Exception as error:  # the thread's own failure must not end the cell
                self.error = self.error or f"{type(error).__name__}: {error}"
                deadline = now + self._interval_s
            self._stop.wait(max(0.0, min(next_look, deadline) - self._clock()))

    def _look(self, now: float) -> None:
        self._on_look()
        position = self._position()
        if position is not None and position != self._last_position:
            self._last_position, self._moved_at = position, now
            self._waits_at_move = self._waits()
        if self.stall is not None:
            self.stall = replace(self.stall, main_waits=self._waits_since_move())
            heard = self._stop_heard()
            if heard is not None and heard >= self.stall.started_at:
                self.stop_sent_at = heard
            self._advance_interrupt(now)
            self._on_change()  # the time without progress goes on

    def _check(self, now: float) -> float:
        """Begin or end a stall; returns when to check again at the latest."""
        progress = self._recorder.snapshot()
        last = progress.last_progress_at
        if progress.phase is None:  # inside Keras' loops only steps count as progress
            last = max(last, self._moved_at)
        limit = self.limits.limit_s(progress)
        if self.stall is not None and self.interrupt is None and last > self.stall.started_at:
            self.past_stalls.append(replace(self.stall, resumed_at=last))
            self.stall = None
            self.stop_sent_at = None
            self._on_change()
        if self.stall is None and now - last >= limit and not self._cell_code_ended():
            self.stall = Stall(
                started_at=last,
                detected_at=now,
                limit_s=limit,
                steps=progress.steps,
                phase=progress.phase,
                step_times=progress.step_times[-8:],
                last_step_s=progress.last_step_s,
                where=self._capture_stacks(),
                main_waits=self._waits_since_move(),
            )
            if self._interrupt_on_stall and self.interrupt is None:
                self._raise(self.stall.where, now)
            self._on_change()
        return now + self._interval_s if self.stall is not None else last + limit

    def _cell_code_ended(self) -> bool:
        """Whether the cell's code ran and the main thread has left it: IPython shows how it
        ended (a Keras traceback takes seconds to format on a busy machine), and no step comes
        after that; it is not the cell that stopped making progress."""
        return self._last_position is not None and self._position() is None

    def _waits_since_move(self) -> int | None:
        now, then = self._waits(), self._waits_at_move
        return None if now is None or then is None else max(now - then, 0)

    def _raise(self, where: StackReport, now: float) -> None:
        """Raise in the thread a library runs the person's code on, else in the main thread."""
        worker = where.worker
        if worker is not None:
            function = worker.user_frames[-1].function if worker.user_frames else "?"
            target = f"{worker.name} running {function}()"
            ident = worker.ident
        else:
            target, ident = "the main thread", threading.main_thread().ident or 0
        interrupt.raise_in_thread(ident)
        self._interrupted.append(ident)
        self.interrupt = InterruptState(RAISED, target, now, now)

    def _advance_interrupt(self, now: float) -> None:
        """An interrupt that has not landed after the grace period: try the next, or give up."""
        state = self.interrupt
        if state is None or state.stage == STUCK or now - state.stage_at < self._grace_s:
            return
        main = threading.main_thread().ident or 0
        if state.stage == RAISED and main not in self._interrupted:
            interrupt.raise_in_thread(main)
            self._interrupted.append(main)
            self.interrupt = replace(
                state, target=f"{state.target}, then the main thread", stage_at=now
            )
        elif state.stage == RAISED and interrupt.signal_main_thread():
            self.interrupt = replace(state, stage=SIGNALLED, stage_at=now)
        else:
            self.interrupt = replace(state, stage=STUCK, stage_at=now)
