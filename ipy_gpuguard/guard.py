"""One guarded cell, from just before it runs to just after it ends, however it ends."""

from __future__ import annotations

from typing import TYPE_CHECKING

from IPython.display import DisplayHandle, display

from .diagnosis import DeviceMemory
from .native_log import NativeLogTee
from .options import GuardOptions
from .remediation import FailedRun
from .telemetry import DeviceBackend, DeviceInfo, FrameworkAllocators, Sampler
from .telemetry.framework import tensorflow_settings
from .ui.summary import PanelSummary
from .ui.view import PanelView

if TYPE_CHECKING:
    from .ui.panel import MemoryPanel


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
    """

    def __init__(
        self,
        backend: DeviceBackend,
        options: GuardOptions,
        live: bool,
        read_native_log: bool = True,
        notes: tuple[str, ...] = (),
    ) -> None:
        self._backend = backend
        self._options = options
        self._notes = notes
        self._devices = _watched(backend.devices(), options.devices)
        # Simulated devices read TensorFlow's CPU allocator: a real allocator for the demo.
        device_type = "CPU" if backend.kind == "simulated" else "GPU"
        self._allocators = FrameworkAllocators(device_type)
        self._panel: MemoryPanel | None = None
        if options.show_panel and live:
            from .ui.panel import MemoryPanel  # ipywidgets takes ~70 ms to import: only when shown

            self._panel = MemoryPanel(self._devices)
        self._handle: DisplayHandle | None = None
        self._native_log = NativeLogTee() if read_native_log else None
        self.log_lines: tuple[str, ...] = ()
        self._allocator_baseline: int | None = None
        self._sampler = Sampler(
            backend,
            self._allocators,
            [info.index for info in self._devices],
            options.interval_s,
            listener=self._redraw if self._panel else None,
        )

    def start(self) -> None:
        """Show the panel and start sampling; on failure, leave nothing open behind."""
        try:
            self._allocator_baseline = self.allocator_bytes()
            self._allocators.reset_peaks(info.index for info in self._devices)
            if self._panel is not None:
                self._panel.draw(self.view, force=True)
                self._handle = display(self._panel, display_id=True)
            if self._native_log is not None:
                self._native_log.start()
            self._sampler.start()
        except BaseException:
            self._stop_native_log()
            self._close_panel()
            raise

    def finish(self) -> PanelView:
        """Stop the sampler and show the frozen summary; returns what it shows."""
        try:
            self._sampler.stop()
            view = self.view(finished=True)
            if self._options.show_panel:
                summary = PanelSummary(view)
                if self._handle is not None:
                    self._handle.update(summary)
                else:
                    display(summary)
            return view
        finally:
            self._stop_native_log()
            self._close_panel()

    def view(self, finished: bool = False) -> PanelView:
        history = self._sampler.history
        no_telemetry = self._backend.kind == "none"
        notes = [self._backend.summary] if no_telemetry else []
        notes += self._notes
        if self._sampler.error:
            notes.append(f"telemetry stopped working: {self._sampler.error}")
        return PanelView(
            source_kind=self._backend.kind,
            source_summary="no GPU telemetry" if no_telemetry else self._backend.summary,
            devices=self._devices,
            history=tuple(history.samples()),
            peaks=history.peaks(),
            elapsed_s=self._sampler.elapsed_s,
            finished=finished,
            notes=tuple(notes),
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
            )
            for info in self._devices
        )
        now = self.allocator_bytes()
        # An allocator that could not be read before the cell had not started: it held nothing.
        baseline = (
            0 if self._allocator_baseline is None and now is not None else self._allocator_baseline
        )
        return FailedRun(
            view, devices, self.log_lines, self.allocator_bytes, baseline, tensorflow_settings()
        )

    def allocator_peak_bytes(self, view: PanelView) -> int | None:
        """The allocators' peak over the run, summed over the watched devices."""
        known = [p.allocator_peak_bytes for p in view.peaks if p.allocator_peak_bytes is not None]
        return sum(known) if known else None

    def allocator_bytes(self) -> int | None:
        """The framework allocators' current bytes over the watched devices; ``None`` if unread."""
        readings = [self._allocators.read(info.index) for info in self._devices]
        known = [reading.current_bytes for reading in readings if reading is not None]
        return sum(known) if known else None

    def _stop_native_log(self) -> None:
        if self._native_log is not None:
            self.log_lines = self._native_log.stop()
            self._native_log = None

    def _close_panel(self) -> None:
        if self._panel is not None:
            self._panel.close()

    def _redraw(self, _sample: object) -> None:
        assert self._panel is not None
        self._panel.draw(self.view)


def _watched(
    devices: tuple[DeviceInfo, ...], wanted: tuple[int, ...] | None
) -> tuple[DeviceInfo, ...]:
    if wanted is None:
        return devices
    return tuple(info for info in devices if info.index in wanted)
