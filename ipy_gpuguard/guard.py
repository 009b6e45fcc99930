"""One guarded cell, from just before it runs to just after it ends, however it ends."""

from __future__ import annotations

from typing import TYPE_CHECKING

from IPython.display import DisplayHandle, display

from .options import GuardOptions
from .telemetry import DeviceBackend, DeviceInfo, FrameworkAllocators, Sampler
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
    """

    def __init__(self, backend: DeviceBackend, options: GuardOptions, live: bool) -> None:
        self._backend = backend
        self._options = options
        self._devices = _watched(backend.devices(), options.devices)
        # Simulated devices read TensorFlow's CPU allocator: a real allocator for the demo.
        device_type = "CPU" if backend.kind == "simulated" else "GPU"
        self._allocators = FrameworkAllocators(device_type)
        self._panel: MemoryPanel | None = None
        if options.show_panel and live:
            from .ui.panel import MemoryPanel  # ipywidgets takes ~70 ms to import: only when shown

            self._panel = MemoryPanel(self._devices)
        self._handle: DisplayHandle | None = None
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
            self._allocators.reset_peaks(info.index for info in self._devices)
            if self._panel is not None:
                self._panel.draw(self.view, force=True)
                self._handle = display(self._panel, display_id=True)
            self._sampler.start()
        except BaseException:
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
            self._close_panel()

    def view(self, finished: bool = False) -> PanelView:
        history = self._sampler.history
        no_telemetry = self._backend.kind == "none"
        notes = [self._backend.summary] if no_telemetry else []
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
