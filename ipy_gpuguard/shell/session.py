"""The one stateful object of the extension: settings, the telemetry source, the guarded cell now running."""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import threading
import uuid
from collections.abc import Callable, Iterator, MutableMapping
from pathlib import Path
from typing import Any, Protocol

from ..cards import CardParts, base_card, search_card, with_parts
from ..diagnosis import Diagnosis, Kind
from ..protocol import Action, ActionResult, Card, RunningCell
from ..record import PanelView, Reclaimed, device_series
from ..record.forecast import KeptForecast
from ..retry import (
    BatchMemory,
    BeforeTheSearch,
    FitWatch,
    Measurer,
    RetryRequest,
    RetrySettings,
    Rewrite,
    Runners,
    RunOutcome,
    cell_frames,
    find_batch_size,
    plan_retry,
    plan_search,
    remembered_note,
)
from ..retry.aftermath import (
    CellEnd,
    SearchRefusal,
    after_success,
    ending,
    fixes,
    keeps_models_before,
    state_outcome,
    stopped_in_the_guard,
)
from ..retry.fit_forecast import FitForecaster
from ..retry.notes import NoteKind, SearchNote
from ..retry.outcome import Ending
from ..telemetry import DeviceBackend, open_backend
from ..telemetry.units import format_bytes, parse_size_list
from ..watchdog import GpuTimeout, SystemTimeoutProbe, TimeoutProbe
from ..watchdog.stacks import CellNamer
from .actions import AroundRun, CardActions, LiveCard
from .card_display import CardDisplay, DataDisplay, TextDisplay, WidgetDisplay
from .config import GPUGuard
from .guarded_run import GuardedRun
from .incidents import IncidentLog, LaterOutcome
from .interrupts import Interrupted, held_interrupt, noted_interrupts
from .kernel_state import KernelStateFile
from .live_hang import LiveHangCards
from .native_log import PipeDrain
from .options import GuardOptions, check_timeout
from .remediation import (
    Failure,
    Policy,
    Remediated,
    attempt_failed,
    incident_outcome,
    remediate,
)
from .terminal_stall import TerminalStallLines


@dataclasses.dataclass(frozen=True)
class FinishedCell:
    """A guarded cell that has ended: its run, its frozen panel, its options and source, and
    what its Keras ``fit`` calls showed."""

    run: GuardedRun
    view: PanelView
    options: GuardOptions
    cell: str
    cell_id: str | None = None
    watch: FitWatch | None = None


@dataclasses.dataclass
class _Attempt:
    """A retry's whole run of the cell while it runs: the watch of its fits, and how the
    guard's finish of it saw it end (the cell's own hooks run inside the run)."""

    watch: FitWatch
    outcome: RunOutcome = dataclasses.field(default_factory=RunOutcome)
    stopped: bool = False  # the person's Stop, held by the guard's start or finish of it


class CellRunner(Protocol):
    """Runs a cell the way the shell runs one (guard hooks included), in the user namespace."""

    @property
    def namespace(self) -> MutableMapping[str, Any]: ...

    def run_cell(self, source: str, quiet: bool = False) -> None: ...


class GuardSession:
    """Owns everything the extension holds between cells; :meth:`close` releases all of it.

    Parameters
    ----------
    config
        The defaults (``%config GPUGuard``).
    live
        Whether panels can be live widgets (inside a Jupyter kernel) or only a final summary.
    open_telemetry
        Opens the telemetry source from the ``simulate`` setting; tests pass their own.
    runner
        Runs the cells of retries; without one, no retry is offered.
    timeout_probe
        Reads the GPUs' own watchdogs (Windows TDR, CUDA's run-time limit); by default this
        machine's, for NVML's GPUs only.
    name_cell
        Names a cell's file in the watchdog's stacks (``Cell In[5]``).
    state_file
        The kernel's state file for the server extension (only inside a Jupyter kernel).
    """

    def __init__(
        self,
        config: GPUGuard,
        live: bool,
        open_telemetry: Callable[[str], DeviceBackend] = open_backend,
        runner: CellRunner | None = None,
        timeout_probe: TimeoutProbe | None = None,
        name_cell: CellNamer | None = None,
        state_file: KernelStateFile | None = None,
    ) -> None:
        self.config = config
        self.live = live
        self._open_telemetry = open_telemetry
        self._runner = runner
        self.timeout_probe = timeout_probe
        self._name_cell = name_cell
        self._timeouts: dict[tuple[int, ...], tuple[GpuTimeout, ...]] = {}
        self.state_file = state_file
        self._pipe_drain = PipeDrain()
        self._attempt: _Attempt | None = None
        #: The person's Stop, held while the guard works after a cell or on an action.
        self._holding: Interrupted | None = None
        self.cards = CardActions()
        #: The last card whose cell ran out of memory with a size to change, for %gpuguard retry.
        self.last_retry_card: str | None = None
        #: The last card that can search for a cell's largest batch (after a failure, or under a
        #: cell that fitted), for %gpuguard retry max.
        self.last_search_card: str | None = None
        #: Whether a frontend renders cards itself (the lab extension's handshake).
        self.frontend_renders_cards = False
        self._backend: DeviceBackend | None = None
        self._backend_lock = threading.Lock()
        self._active: (
            tuple[int, GuardedRun, GuardOptions, str, str | None, int | None, FitWatch | None]
            | None
        ) = None
        self.last_failure: Kind | None = None
        self.last_run: GuardedRun | None = None  # the last guarded cell's, once it has ended
        #: The last guarded fit's forecast (``%gpuguard forecast``), kept past cells without one.
        self.last_forecast: KeptForecast | None = None
        #: The last guarded cell ran a fit the guard saw: its forecast is the one kept.
        self.last_cell_fitted = True

    @property
    def backend(self) -> DeviceBackend:
        """The telemetry source, opened on first use: NVML starts only when a cell needs it."""
        with self._backend_lock:
            if self._backend is None:
                self._backend = self._open_telemetry(self.config.simulate)
            return self._backend

    def options(
        self,
        interval_s: float | None = None,
        devices: tuple[int, ...] | None = None,
        no_panel: bool = False,
        retry: RetrySettings | None = None,
        timeout_s: float | None = None,
        on_hang: str | None = None,
    ) -> GuardOptions:
        """The config's defaults with one cell's options laid over them; ``ValueError`` when a
        timeout is shorter than the sampling interval."""
        interval = self.config.interval if interval_s is None else interval_s
        timeout = self.config.timeout if timeout_s is None else timeout_s
        return GuardOptions(
            interval_s=interval,
            devices=devices if devices is not None else (tuple(self.config.devices) or None),
            show_panel=self.config.panel and not no_panel,
            timeout_s=None if timeout is None else check_timeout(timeout, interval),
            on_hang=on_hang or self.config.on_hang,
            first_step_s=self.config.first_step_allowance,
            retry=retry or RetrySettings(),
        )

    def check_devices(self, options: GuardOptions) -> None:
        """Refuse indices of devices the framework does not see (when it sees any at all)."""
        visible = [info.index for info in self.backend.devices()]
        missing = [index for index in options.devices or () if index not in visible]
        if visible and missing:
            raise ValueError(
                f"no device {', '.join(map(str, missing))}: the visible devices are "
                f"{', '.join(map(str, visible))} (framework indices, after CUDA_VISIBLE_DEVICES)"
            )

    @property
    def incident_log(self) -> IncidentLog | None:
        """The incident log, or ``None`` when ``GPUGuard.incident_log`` is empty."""
        path = self.config.incident_log
        return IncidentLog(Path(path).expanduser()) if path else None

    @property
    def batch_memory(self) -> BatchMemory | None:
        """The remembered batch sizes, or ``None`` when ``GPUGuard.batch_memory`` is empty."""
        path = self.config.batch_memory
        return BatchMemory(Path(path).expanduser()) if path else None

    @property
    def recording_attempt(self) -> bool:
        """Whether the cell running now is a retry's attempt, whose driver reads how it ended."""
        return self._attempt is not None

    def pending_error(self, key: int) -> Exception | None:
        """The error of work the guarded cell at nesting depth ``key`` dispatched
        asynchronously (JAX) and that failed after its last line returned; ``None`` when it did
        not, or when that cell is not the guarded one."""
        if self._active is None or self._active[0] != key:
            return None
        return self._active[1].pending_work.error()

    def guarding_outside(self, key: int) -> bool:
        """Whether a cell at nesting depth ``key`` runs inside a guarded cell: one guard
        watches one cell at a time, the outermost."""
        return self._active is not None and self._active[0] < key

    def begin(
        self,
        key: int,
        options: GuardOptions,
        cell: str = "",
        cell_id: str | None = None,
        execution_count: int | None = None,
    ) -> None:
        """Start guarding the cell at nesting depth ``key`` (1: a cell the person ran; deeper:
        a cell run from inside one). A guard of an outer cell is left alone; a guard at this depth
        or deeper is stale (its cell ended without IPython saying so) and is ended first."""
        if self._active is not None:
            if self._active[0] < key:
                return
            self.end(None)
        memory = self.batch_memory
        note = None
        if memory is not None and self._runner is not None and not self.recording_attempt:
            batch_var = options.retry.batch_var
            note = remembered_note(cell, batch_var, self._device_bytes(options), memory)
        watch = self._attempt.watch if self._attempt is not None else self._cell_watch(options)
        run = GuardedRun(
            self.backend,
            options,
            # A retry's attempt runs inside its card: only its frozen summary is kept there, so
            # that a saved notebook never shows a "running" panel of an attempt long finished.
            self.live and not self.recording_attempt,
            self.config.native_log,
            (note,) if note else (),
            self.gpu_timeouts(options.devices),
            self._name_cell,
            self.state_file,
            self._pipe_drain,
            self._stall_shown(cell_id, execution_count),
            watch,
            self.frontend_renders_cards and not self.recording_attempt,
        )
        if self.state_file is not None and not self.recording_attempt:
            first = next((line.strip() for line in cell.splitlines()[1:] if line.strip()), "")
            self.state_file.cell_started(RunningCell(cell_id, execution_count, first))
        run.start()
        self._active = (key, run, options, cell, cell_id, execution_count, watch)

    def _stall_shown(
        self, cell_id: str | None, execution_count: int | None
    ) -> Callable[[PanelView], None] | None:
        """Where a stall is shown while the cell runs: as a card where the frontend renders
        cards (the lab extension's Interrupt works then), as a line in a terminal."""
        if self.recording_attempt:
            return None
        if self.frontend_renders_cards:
            return LiveHangCards(cell_id, execution_count).changed
        if not self.live:
            return TerminalStallLines().changed
        return None

    def _defined_before(self) -> Callable[[object], bool]:
        """Whether an object is one of the namespace's as the cell begins."""
        if self._runner is None:
            return lambda value: False
        namespace = {id(value) for value in self._runner.namespace.values()}
        return lambda value: id(value) in namespace

    def _cell_watch(self, options: GuardOptions) -> FitWatch | None:
        """What notes a cell's ``fit`` calls, for a retry or a search; when one may follow by
        itself (``--auto-retry``, ``--find-max``), it keeps the models of earlier cells as they
        were, for the search to put back before its whole runs."""
        if self._runner is None:
            return None
        before = BeforeTheSearch() if keeps_models_before(options.retry) else None
        return FitWatch(self._defined_before(), before)

    def end(self, key: int | None, ended_with: str | None = "") -> FinishedCell | None:
        """Finish the guarded cell at nesting depth ``key`` (``None``: whichever is running);
        ``ended_with``: the type of the exception it raised (``None``: it did not)."""
        if self._active is None or (key is not None and self._active[0] != key):
            return None
        _, run, options, cell, cell_id, execution_count, watch = self._active
        self._active = None
        self.last_run = run
        view = run.finish(ended_with)
        fitted = _kept(run.forecaster, execution_count)
        self.last_cell_fitted = fitted is not None
        if fitted is not None:  # a cell with no fit keeps the last fit's
            self.last_forecast = fitted
        return FinishedCell(run, view, options, cell, cell_id, watch)

    def forecast_now(self) -> tuple[KeptForecast | None, bool]:
        """The last guarded fit's forecast, and whether it is of the last guarded cell. Asked
        inside a guarded cell: that cell's own once its fit has begun (none yet, until its
        first steps have been read), else the one kept, an earlier cell's."""
        if self._active is None:
            return self.last_forecast, self.last_cell_fitted
        _, run, *_, execution_count, _ = self._active
        forecaster = run.forecaster
        if not forecaster.fit_seen:
            return self.last_forecast, False
        return _kept(forecaster, execution_count) or KeptForecast(None), True

    def ended(self, outcome: str, rule_id: str | None = None) -> None:
        """Record how the guarded cell ended in the kernel's state file."""
        if self.state_file is not None and self.last_run is not None:
            self.state_file.cell_ended(outcome, rule_id, self.last_run.steps.snapshot())

    def after(
        self,
        finished: FinishedCell,
        error: BaseException | None,
        execution_count: int | None = None,
        stopped: bool = False,
    ) -> Ending:
        """Do what the guard decides after ``finished`` (see :mod:`~ipy_gpuguard.retry.
        aftermath`): diagnose a failure, show its card, free memory and retry; search for the
        largest batch of a cell that ran, or offer to; record how it ended. ``error``: what the
        cell raised; ``stopped``: the person's Stop landed in the guard's finish. Returns how
        the cell ends, which the caller carries out on IPython's result."""
        rule_id = None
        with self._held() as holding:
            if error is None:
                end = self._cell_end(finished, False, stopped)
                how = self._after_success(finished, end, execution_count)
            else:
                end = self._cell_end(finished, True, stopped)
                remediated = self._remediate(finished, error, end, execution_count)
                how, rule_id = remediated.ending, remediated.diagnosis.rule_id
        if holding.received and how is not Ending.STOPPED:
            how = self._stopped_in_the_guard(end)
        self.ended(state_outcome(end.failed, how), rule_id)
        return how

    def _cell_end(self, finished: FinishedCell, failed: bool, stopped: bool) -> CellEnd:
        return CellEnd.of(
            finished.options.retry,
            finished.watch,
            failed=failed,
            stopped_in_finish=stopped,
            live=self.live,
            free_memory_on_oom=self.config.free_memory_on_oom,
        )

    @staticmethod
    def _stopped_in_the_guard(end: CellEnd) -> Ending:
        """The person's Stop landed in the guard's own steps: say so in a line."""
        how = stopped_in_the_guard(end)
        stage = "diagnose" if end.failed else "search"
        then = "the cell ends interrupted" if how is Ending.STOPPED else "its result stands"
        print(f"ipy_gpuguard: interrupted while the guard was to {stage}; {then}", file=sys.stderr)
        return how

    @contextlib.contextmanager
    def _held(self) -> Iterator[Interrupted]:
        """Hold the person's Stop through the guard's own steps (a retry's runs and
        measurements let it through); the attempts stop at the next step once it came."""
        outer = self._holding
        with held_interrupt() as holding:
            self._holding = holding
            try:
                yield holding
            finally:
                self._holding = outer

    def _remediate(
        self,
        finished: FinishedCell,
        error: BaseException,
        end: CellEnd,
        execution_count: int | None,
    ) -> Remediated:
        """Diagnose the failed cell, show its card, retry when asked (see
        :func:`.remediation.remediate`)."""
        policy = Policy(incident_log=self.incident_log, log_cell_source=self.config.log_cell_source)
        failing = cell_frames(error)
        failed_run = finished.run.failed_run(finished.view)

        def retry_for(diagnosis: Diagnosis) -> RetryRequest | None:
            if self._runner is None:
                return None
            return plan_retry(
                finished.cell,
                finished.options.retry,
                diagnosis,
                failing,
                self._runner.namespace,
                self._device_bytes(finished.options),
                failed_run.allocator_baseline_bytes,
                self.batch_memory,
                self._runners(finished),
                finished.watch.replicas if finished.watch is not None else 1,
                finished.watch,
                failed_run.forecast,
                finished.run.capacity_bytes(),
            )

        def present(
            diagnosis: Diagnosis,
            notes: tuple[str, ...],
            parts: CardParts,
            free_memory: Callable[[], Reclaimed],
        ) -> LiveCard:
            view = finished.view
            chart = (
                tuple(device_series(view, info) for info in view.devices) if view.history else ()
            )
            base = base_card(
                diagnosis,
                uuid.uuid4().hex,
                chart,
                notes,
                finished.cell_id,
                execution_count,
                failed_run.hang,
            )
            live = LiveCard(base, parts, self._display(with_parts(base, parts)), free_memory)
            self.cards.add(live)
            if parts.request is not None and parts.request.retry is not None:
                self.last_retry_card = self.last_search_card = base.id
            return live

        failure = Failure(dataclasses.asdict(finished.options), finished.cell, finished.cell_id)
        remediated = remediate(
            error, failed_run, end, policy, failure, self.last_failure, retry_for, present
        )
        self.last_failure = remediated.diagnosis.kind
        card = self.cards.get(self.last_retry_card or "")
        request = card.parts.request if card is not None else None
        if request is not None and request.retry is not None:
            request.retry.forget_the_fit()  # a card kept for later pins no model nor data
        return remediated

    def _after_success(
        self, finished: FinishedCell, end: CellEnd, execution_count: int | None
    ) -> Ending:
        """A guarded cell that ran: search for its largest batch, or offer to, as
        :func:`after_success` decides."""
        watch, settings = finished.watch, finished.options.retry
        if watch is None or self._runner is None:
            return Ending.AS_RAN
        decided = after_success(end)
        if decided.stopped:
            return Ending.STOPPED
        if decided.refused is SearchRefusal.FIT_CUT:
            print(
                "ipy_gpuguard: --find-max ran no search: this cell's fit did not run to its "
                "end though the cell raised nothing (an error caught in the cell, or under "
                "%%capture), so no batch size is known to fit",
                file=sys.stderr,
            )
        if not (decided.search or decided.offer):
            return Ending.AS_RAN
        peak = finished.run.allocator_peak_bytes(finished.view)
        request = plan_search(
            finished.cell,
            settings,
            self._runner.namespace,
            watch,
            peak,
            self._device_bytes(finished.options),
            finished.run.failed_run(finished.view).allocator_baseline_bytes,
            self.batch_memory,
            self._runners(finished),
            finished.run.capacity_bytes(),
        )
        retry = request.retry
        if retry is None:
            if decided.search:
                print(
                    "ipy_gpuguard: --find-max found no batch size to change in this cell "
                    f"({request.offer.reason}); its run stands",
                    file=sys.stderr,
                )
            return Ending.AS_RAN
        if watch.trained_earlier_model and not decided.search:
            retry.notes.append(SearchNote(NoteKind.TRAINED_EARLIER_MODEL))
        live = self._show_search(request, finished, execution_count)
        if not decided.search:
            retry.forget_the_fit()
            return Ending.AS_RAN
        retry.began_with(RunOutcome(True, peak_bytes=peak))
        live.retry(None, settings.auto_runs, True, None)
        live.display.show(live.card, live.verdict_message())
        return ending(retry)

    def _runners(self, finished: FinishedCell) -> Runners:
        """How a retry of ``finished`` runs: whole runs through the shell; sizes measured with
        the guard's own training calls, failures judged against the cell's run; the person's
        Stop held while a model is put back."""
        failed_run = finished.run.failed_run(finished.view)
        previous = self.last_failure

        def judge(error: BaseException, ran: RunOutcome) -> RunOutcome:
            quiet_run = dataclasses.replace(failed_run, log_lines=())
            return attempt_failed(error, quiet_run, ran, previous, measured=True)

        measurer = Measurer(finished.run.probe_peaks(), judge, held_interrupt, noted_interrupts)
        return Runners(
            self.run_attempt,
            measurer.measure,
            held_interrupt,
            stop_requested=lambda: self._holding is not None and self._holding.received,
        )

    def _show_search(
        self, request: RetryRequest, finished: FinishedCell, execution_count: int | None
    ) -> LiveCard:
        assert request.retry is not None
        base = search_card(
            uuid.uuid4().hex, request.retry.setup.current_size, finished.cell_id, execution_count
        )
        parts = CardParts(request=request)
        live = LiveCard(base, parts, self._display(with_parts(base, parts)))
        self.cards.add(live)
        self.last_search_card = base.id
        return live

    def act(self, action: Action, around: AroundRun | None = None) -> ActionResult:
        """Carry out an action on a card (a button, ``%gpuguard retry``, the lab extension); a
        retry that fixed the cell is recorded as such in the kernel's state file."""
        with self._held():
            result = self.cards.act(action, around)
        card = result.card
        verdict = card.retry.verdict if card is not None and card.retry is not None else None
        if card is not None and verdict is not None and fixes(verdict) and result.ok:
            self.ended("fixed", card.rule_id)
            live, log = self.cards.get(card.id), self.incident_log
            if live is not None and live.in_the_log and log is not None:
                outcome = incident_outcome(card.reclaimed is not None, verdict.batch_size)
                log.append(LaterOutcome(card.id, outcome))
        return result

    def _display(self, card: Card) -> CardDisplay:
        if self.frontend_renders_cards:
            return DataDisplay(card)
        if self.live:
            return WidgetDisplay(card, self.act)
        return TextDisplay(card)

    def why_no_retry(self, cell: str, options: GuardOptions) -> str | None:
        """Why ``cell`` could not be retried with another batch size; ``None`` when it can."""
        finding = find_batch_size(cell, options.retry.batch_var)
        if finding.target is None:
            return None if finding.needs_the_run else finding.reason
        name = finding.target.name
        runner = self._runner
        if finding.target.literal is None and runner is not None and name not in runner.namespace:
            return (
                f"{name}, the batch size, is neither set in this cell nor defined by an "
                "earlier one: run the cell that defines it first"
            )
        return None

    def run_attempt(self, rewritten: Rewrite, watch: FitWatch) -> RunOutcome:
        """Run a retry's cell whole through the shell, guarded, its ``fit`` calls noted by
        ``watch``; how it ended is what the guard's finish of it said (:meth:`record_attempt`),
        with the person's Stop wherever it landed."""
        assert self._runner is not None
        self._attempt = _Attempt(watch)
        escaped = False
        try:
            self._runner.namespace.update(rewritten.namespace)
            with noted_interrupts() as noted:
                # A terminal prints each attempt in one line; its traceback would be hundreds.
                self._runner.run_cell(rewritten.source, quiet=not self.live)
        except KeyboardInterrupt:
            # IPython's transform of the cell, before its code, lets a Stop (or a
            # KeyboardInterrupt raised there) out of run_cell: the run was stopped all the same.
            escaped = True
        finally:
            attempt, self._attempt = self._attempt, None
        return attempt.outcome.with_stop(attempt.stopped or noted.received or escaped)

    def attempt_interrupted(self) -> None:
        """The person's Stop reached the guard's own start or finish of an attempt, which held
        it: the attempts stop there, as if it had reached the cell."""
        if self._attempt is not None:
            self._attempt.stopped = True

    def record_attempt(self, finished: FinishedCell, error: BaseException | None) -> None:
        """How a retry's cell ended: its allocator peak; on failure, its diagnosis, and memory
        freed."""
        assert self._attempt is not None
        stopped = isinstance(error, KeyboardInterrupt) and not finished.run.watchdog.interrupt
        ran = RunOutcome(
            finished=True,
            peak_bytes=finished.run.allocator_peak_bytes(finished.view),
            interrupted=stopped,
        )
        if error is not None:
            failed_run = finished.run.failed_run(finished.view)
            ran = attempt_failed(error, failed_run, ran, self.last_failure)
        self._attempt.outcome = ran

    def gpu_timeouts(self, indices: tuple[int, ...] | None = None) -> tuple[GpuTimeout, ...]:
        """The watchdog of each device (all, or ``indices``), read once per session."""
        devices = tuple(
            info for info in self.backend.devices() if indices is None or info.index in indices
        )
        probe = self.timeout_probe
        if probe is None and self.backend.kind == "nvml":
            probe = self.timeout_probe = SystemTimeoutProbe()
        if probe is None or not devices:
            return ()
        key = tuple(info.index for info in devices)
        if key not in self._timeouts:
            self._timeouts[key] = probe.timeouts(devices)
        return self._timeouts[key]

    def _device_bytes(self, options: GuardOptions) -> tuple[int, ...]:
        return tuple(
            info.total_bytes
            for info in self.backend.devices()
            if (options.devices is None or info.index in options.devices) and info.total_bytes
        )

    def simulate(self, spec: str) -> str:
        """Switch simulated devices on (``"8GiB"``) or off (``""``); returns what changed, in words."""
        sizes = parse_size_list(spec) if spec else ()
        self.config.simulate = spec
        self._reset_backend()
        if not sizes:
            return "simulated devices off"
        named = ", ".join(format_bytes(size) for size in sizes)
        return f"simulated devices on: {named} (a real GPU, when NVML finds one, is shown instead)"

    def status_lines(self) -> list[str]:
        backend = self.backend
        lines = [f"telemetry: {backend.kind} · {backend.summary}"]
        lines += [
            f"  GPU {info.index} · {info.name} · {format_bytes(info.total_bytes)}"
            for info in backend.devices()
        ]
        timeouts = self.gpu_timeouts()
        if timeouts:
            lines += [f"  {timeout.text}" for timeout in timeouts]
        elif backend.devices():
            lines.append(f"  GPU watchdog: not read for {backend.kind} devices")
        timeout = self.config.timeout
        limit = f"{timeout:g} s" if timeout is not None else "adaptive"
        lines.append(
            f"stall watchdog: limit {limit} · first step up to "
            f"{self.config.first_step_allowance:g} s · on hang {self.config.on_hang}"
        )
        devices = ",".join(map(str, self.config.devices)) or "all visible"
        lines.append(
            f"settings: interval {self.config.interval:g} s · devices {devices} · "
            f"panel {'on' if self.config.panel else 'off'} · simulate {self.config.simulate or 'off'}"
        )
        lines.append(f"guarded cell running: {'yes' if self._active else 'no'}")
        return lines

    def close(self) -> None:
        """Stop whatever runs, freeze the cards, release the telemetry library, and remove the
        kernel's state file."""
        try:
            self.end(None)
        finally:
            self.cards.freeze_all()
            self._pipe_drain.close()
            self._reset_backend()
            if self.state_file is not None:
                self.state_file.remove()

    def _reset_backend(self) -> None:
        with self._backend_lock:
            backend, self._backend = self._backend, None
            self._timeouts.clear()
        if backend is not None:
            backend.close()


def _kept(forecaster: FitForecaster, execution_count: int | None) -> KeptForecast | None:
    """What a guarded cell's fit leaves for ``%gpuguard forecast``: its forecast, or why it has
    none; ``None`` where the cell ran no fit the guard saw."""
    if all(said is None for said in (forecaster.forecast, forecaster.unforeseen, forecaster.error)):
        return None
    return KeptForecast(
        forecaster.forecast,
        forecaster.unforeseen,
        None if forecaster.forecast is not None else forecaster.error,
        execution_count,
    )
