"""One guarded cell, from just before it runs to just after it ends, however it ends."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import replace

from IPython.display import display

from ..cards.forecast_words import forecast_line, growth_line
from ..diagnosis import DeviceMemory
from ..record import Capacity, FailedRun, Forecast, PanelView, WatchView
from ..retry.fit_forecast import FitForecaster
from ..retry.measure import PeakReader
from ..telemetry import (
    AllocatorReading,
    DeviceBackend,
    DeviceInfo,
    FrameworkAllocators,
    Sample,
    Sampler,
)
from ..telemetry.framework import tensorflow_settings
from ..ui.summary import PanelSummary
from ..watchdog import (
    FitWatcher,
    FitWatchers,
    GpuTimeout,
    KerasHooks,
    StallLimits,
    StepRecorder,
    Watchdog,
    capture_stacks,
    set_active,
    step_warning,
)
from ..watchdog.stacks import CellNamer, main_thread_position
from ..watchdog.stop_heard import StopHeard
from .kernel_state import KernelStateFile
from .live_panel import MemoryPanel
from .native_log import NativeLogTee, PipeDrain
from .options import GuardOptions
from .pending_work import PendingWork


class GuardedRun:
    """Starts the sampler and the panel for one cell, and freezes them into a summary at its end.

    Parameters
    ----------
    live
        Whether a frontend can render widgets (a Jupyter kernel). Without one, the summary is
        shown once, as text, when the cell ends.
    read_native_log
        Whether to read the framework's native log (file descriptor 2) for the diagnosis.
    notes
        Lines the panel shows from the start (a remembered batch size).
    timeouts
        The watched GPUs' own watchdogs, for the warning when steps come near their limit.
    name_cell
        Names a cell's file in stacks (``Cell In[5]``).
    state_file
        The kernel's state file, which each sample updates (at most once a second).
    pipe_drain
        Keeps copying the native log's pipe for child processes that outlive the cell.
    on_stall
        Hears each change of a stall while the cell runs, and once it ended (its card, or its
        line in a terminal).
    fit_watch
        Notes the cell's Keras ``fit`` calls for a search (never ends them).
    stall_as_card
        The frontend shows a stall as a card: the panel leaves out where it waits.
    """

    def __init__(
        self,
        backend: DeviceBackend,
        options: GuardOptions,
        live: bool,
        read_native_log: bool = True,
        notes: tuple[str, ...] = (),
        timeouts: tuple[GpuTimeout, ...] = (),
        name_cell: CellNamer | None = None,
        state_file: KernelStateFile | None = None,
        pipe_drain: PipeDrain | None = None,
        on_stall: Callable[[PanelView], None] | None = None,
        fit_watch: FitWatcher | None = None,
        stall_as_card: bool = False,
    ) -> None:
        self._backend = backend
        self._on_stall = on_stall
        self._stall_as_card = stall_as_card
        self._state_file = state_file
        self._options = options
        self._notes = notes
        self._timeouts = timeouts
        self._step_warning: str | None = None
        self._devices = _watched(backend.devices(), options.devices)
        # Simulated devices read TensorFlow's CPU allocator: a real allocator for the demo.
        device_type = "CPU" if backend.kind == "simulated" else "GPU"
        self._allocators = FrameworkAllocators(device_type)
        self._panel: MemoryPanel | None = None
        if options.show_panel and live:
            self._panel = MemoryPanel()
        self._native_log = NativeLogTee(pipe_drain) if read_native_log else None
        self.log_lines: tuple[str, ...] = ()
        self._allocator_baseline: int | None = None
        #: What other processes hold of each watched device, read on the sampler's thread.
        self._held_by_others: dict[int, int | None] = {}
        self._sampler = Sampler(
            backend,
            self._allocators,
            [info.index for info in self._devices],
            options.interval_s,
            listener=self._sampled,
        )
        self._stop_heard = StopHeard()
        self.steps = StepRecorder()
        self.pending_work = PendingWork(frozenset())  # JAX's arrays as the cell starts
        #: Where a line of the guard's goes without a panel: the stream of the cell's start,
        #: never one the person's code redirects ``sys.stderr`` to while it runs.
        self._stderr = sys.stderr
        self.forecaster = FitForecaster(
            self.capacity,
            self._allocator_peak_now,
            self.allocator_bytes,
            self._forecast_made,
            self._allocator_read,
        )
        self._keras = KerasHooks(self.steps, watcher=FitWatchers((fit_watch, self.forecaster)))
        self.watchdog = Watchdog(
            self.steps,
            StallLimits(options.timeout_s, options.first_step_s),
            options.interval_s,
            interrupt_on_stall=options.on_hang == "interrupt",
            capture_stacks=lambda: capture_stacks(name_cell or (lambda filename: None)),
            on_change=self._stall_changed,
            on_look=self._keras.attach_new,
            position=lambda: main_thread_position(name_cell),
            stop_heard=self._stop_heard.heard_at,
        )

    def start(self) -> None:
        """Show the panel and start sampling; on failure, leave nothing open behind."""
        try:
            self.pending_work = PendingWork.now()
            self._allocator_baseline = self.allocator_bytes()
            self._allocators.reset_peaks(info.index for info in self._devices)
            if self._panel is not None:
                self._panel.show(self.view())
            if self._native_log is not None:
                self._native_log.start()
            self._sampler.start()
            set_active(self.steps)
            self._keras.attach_new()
            self._stop_heard.listen()
            self.watchdog.start()
        except BaseException:
            self._stop_watching()
            self._sampler.stop()
            self._stop_native_log()
            self._end_panel()
            raise

    def finish(self, ended_with: str | None = "") -> PanelView:
        """Stop the watchdog and the sampler, and show the frozen summary; returns what it shows.

        The watchdog stops first: an interrupt of its that has not landed is withdrawn before
        anything else runs on the main thread. ``ended_with`` is the type of the exception the
        cell ended with (``None``: it did not fail; empty: not known). A cell that did not fail
        ends any stall it was in: it was slow, not stuck.
        """
        try:
            try:
                self._stop_watching()
                if ended_with is None:
                    self.watchdog.cell_finished()
            finally:
                self._sampler.stop()
            self.forecaster.look()  # a fit shorter than a sample's interval
            self.forecaster.cell_ended()
            view = replace(self.view(finished=True), ended_with=ended_with)
            if self._on_stall is not None:  # a stall's card says how it ended
                self._on_stall(view)
            if self._options.show_panel:
                summary = PanelSummary(view)
                if self._panel is None or not self._panel.end(summary):
                    display(summary)
            return view
        finally:
            self._stop_native_log()
            self._end_panel()

    def view(self, finished: bool = False) -> PanelView:
        history = self._sampler.history
        no_telemetry = self._backend.kind == "none"
        notes = [self._backend.summary] if no_telemetry else []
        notes += self._notes
        if self._sampler.error:
            notes.append(f"telemetry stopped working: {self._sampler.error}")
        if self.watchdog.error:
            notes.append(f"the watchdog stopped working: {self.watchdog.error}")
        forecast = self.forecaster.forecast
        if forecast is not None:
            notes += [forecast_line(forecast), *filter(None, [growth_line(forecast)])]
        if self.forecaster.error:
            notes.append(f"the forecast stopped: {self.forecaster.error}")
        return PanelView(
            source_kind=self._backend.kind,
            source_summary="no GPU telemetry" if no_telemetry else self._backend.summary,
            devices=self._devices,
            history=tuple(history.samples()),
            peaks=history.peaks(),
            elapsed_s=self._sampler.elapsed_s,
            finished=finished,
            notes=tuple(notes),
            watch=self._watch_view(),
            stall_as_card=self._stall_as_card,
        )

    def _watch_view(self) -> WatchView:
        watchdog = self.watchdog
        progress = self.steps.snapshot()
        if self._step_warning is None and progress.step_times and self._timeouts:
            self._step_warning = step_warning(max(progress.step_times), self._timeouts)
        return WatchView(
            progress=progress,
            started_at=watchdog.started_at,
            now=watchdog.now,
            stall=watchdog.stall,
            past_stalls=tuple(watchdog.past_stalls),
            interrupt=watchdog.interrupt,
            interrupting=self._options.on_hang == "interrupt",
            step_warning=self._step_warning,
            stop_sent_at=watchdog.stop_sent_at,
        )

    def failed_run(self, view: PanelView) -> FailedRun:
        """What a diagnosis may use of this run, once it has finished."""
        peaks = {peak.index: peak for peak in view.peaks}
        devices = tuple(
            DeviceMemory(
                index=info.index,
                name=info.name,
                total_bytes=info.total_bytes,
                peak_used_bytes=peaks[info.index].device_used_bytes
                if info.index in peaks
                else None,
                peak_allocator_bytes=(
                    peaks[info.index].allocator_peak_bytes if info.index in peaks else None
                ),
                other_processes=self._backend.other_processes(info.index),
                simulated=info.simulated,
                allocator_framework=(
                    peaks[info.index].allocator_framework if info.index in peaks else None
                ),
            )
            for info in self._devices
        )
        now = self.allocator_bytes()
        # An allocator that could not be read before the cell had not started: it held nothing.
        baseline = (
            0 if self._allocator_baseline is None and now is not None else self._allocator_baseline
        )
        return FailedRun(
            view,
            devices,
            self.log_lines,
            self.allocator_bytes,
            baseline,
            tensorflow_settings(),
            hang=view.hang_evidence(),
            watchdog_interrupted=self.watchdog.interrupt is not None,
            forecast=self.forecaster.forecast,
        )

    def allocator_peak_bytes(self, view: PanelView) -> int | None:
        """The fullest watched device's allocator peak over the run: the device that runs out
        first, as a ``tf.distribute`` replica does (the search's capacity is one device's)."""
        known = [p.allocator_peak_bytes for p in view.peaks if p.allocator_peak_bytes is not None]
        return max(known) if known else None

    def probe_peaks(self) -> PeakReader:
        """Reads the allocator's peak over one of the guard's own measurements of a size, on
        the devices this run watched (the fullest one, as :meth:`allocator_peak_bytes`)."""

        def held() -> int | None:
            reading = self._fullest_allocator()
            return None if reading is None else reading.current_bytes

        indices = [info.index for info in self._devices]
        return PeakReader(
            lambda: self._allocators.reset_peaks(indices), self._allocator_peak_now, held
        )

    def capacity_bytes(self) -> int | None:
        """The bytes of :meth:`capacity`: what the search and the retry aim under."""
        capacity = self.capacity()
        return None if capacity is None else capacity.capacity_bytes

    def capacity(self) -> Capacity | None:
        """The memory of the smallest watched device that the framework's allocator may take:
        the device's own, less what other processes hold of it (a second kernel, a stale one),
        or less still where the allocator is held to less (JAX's pool).

        What others hold is the sampler's last reading (:meth:`read_held_by_others`): called
        from the person's thread as a fit begins, this reads no NVML, whose calls a stalled
        driver or a sampler inside one can hold for seconds. Before the first reading, and
        where others would hold the whole device or more (bindings that misread NVML's
        structures), the device counts whole.
        """
        capacities = []
        for info in self._devices:
            others = self._held_by_others.get(info.index) or 0
            if info.total_bytes and others >= info.total_bytes:
                others = 0
            free = info.total_bytes - others if info.total_bytes else None
            limit = self._allocators.limit_bytes(info.index) or None
            if free is not None and (limit is None or free <= limit):
                capacities.append(Capacity(free, others))
            elif limit is not None:
                capacities.append(Capacity(limit))
        return min(capacities, key=lambda capacity: capacity.capacity_bytes, default=None)

    def _fullest_allocator(self) -> AllocatorReading | None:
        readings = [self._allocators.read(info.index) for info in self._devices]
        known = [reading for reading in readings if reading is not None]
        return max(known, key=lambda reading: reading.peak_bytes) if known else None

    def allocator_bytes(self) -> int | None:
        """The framework allocators' current bytes over the watched devices; ``None`` if unread."""
        readings = [self._allocators.read(info.index) for info in self._devices]
        known = [reading.current_bytes for reading in readings if reading is not None]
        return sum(known) if known else None

    def _stop_watching(self) -> None:
        try:
            self.watchdog.stop()
        finally:
            self._stop_heard.close()
            self._keras.detach()
            set_active(None)

    def _stop_native_log(self) -> None:
        if self._native_log is not None:
            self.log_lines = self._native_log.stop()
            self._native_log = None

    def _end_panel(self) -> None:
        """No drawing of the panel after this (a summary put in its place stays)."""
        if self._panel is not None:
            self._panel.end()

    def read_held_by_others(self) -> None:
        """From the sampler's thread, with every sample: what other processes hold of each
        watched device, for :meth:`capacity`; unknown for a device whose reading fails."""
        held: dict[int, int | None] = {}
        for info in self._devices:
            try:
                held[info.index] = self._backend.bytes_held_by_others(info.index)
            except Exception:  # the bindings' own; the device then counts whole
                held[info.index] = None
        self._held_by_others = held

    def _sampled(self, sample: Sample) -> None:
        """From the sampler's thread: what others hold, the forecast, the panel's drawing, the
        state file."""
        self.read_held_by_others()
        self.forecaster.look()
        if self._panel is not None:
            self._panel.draw(self.view)
        if self._state_file is not None:
            self._state_file.sampled(sample, self._devices, self.steps.snapshot())

    def _forecast_made(self, forecast: Forecast) -> None:
        """Draw the forecast at once: before the first step where it foresees an out-of-memory
        error; in a terminal, that warning is a line of its own."""
        if self._panel is not None:
            self._panel.draw(self.view, force=True)
        elif not forecast.fits:
            print(f"ipy_gpuguard: {forecast_line(forecast)}", file=self._stderr)

    def _allocator_read(self) -> str | None:
        """Whose allocator the guard reads on the fullest watched device."""
        reading = self._fullest_allocator()
        return None if reading is None else reading.framework

    def _allocator_peak_now(self) -> int | None:
        """The allocator's peak since its last reset, on the fullest watched device; ``None``
        where it is not known (JAX's, until it passes its earlier mark)."""
        reading = self._fullest_allocator()
        return reading.peak_bytes if reading is not None and reading.peak_known else None

    def _stall_changed(self) -> None:
        """From the watchdog thread: a stall began, goes on or ended."""
        if self._panel is not None:
            self._panel.draw(self.view, force=True)
        if self._on_stall is not None:
            self._on_stall(self.view())


def _watched(
    devices: tuple[DeviceInfo, ...], wanted: tuple[int, ...] | None
) -> tuple[DeviceInfo, ...]:
    if wanted is None:
        return devices
    return tuple(info for info in devices if info.index in wanted)
