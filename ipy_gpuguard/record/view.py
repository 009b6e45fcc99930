"""What the memory panel shows, as one value: built from the sampler, rendered by ``render``."""

from __future__ import annotations

from dataclasses import dataclass

from ..protocol import DeviceSeries
from ..telemetry import DeviceInfo, DevicePeak, DeviceSample, Sample
from ..watchdog import GpuDuringStall, HangEvidence, InterruptState, ProgressSnapshot, Stall

#: Fractions of device memory at which a bar turns amber, then red.
WARNING_FRACTION = 0.85
DANGER_FRACTION = 0.95


@dataclass(frozen=True)
class WatchView:
    """The watchdog's side of the panel: progress, the stall if there is one, the interrupt.

    Times of stalls are the watchdog's clock; ``started_at`` (the same clock) turns them into
    seconds since the cell started, the panel's time.
    """

    progress: ProgressSnapshot
    started_at: float
    now: float
    stall: Stall | None = None
    past_stalls: tuple[Stall, ...] = ()
    interrupt: InterruptState | None = None
    interrupting: bool = False
    step_warning: str | None = None
    #: When the person's Stop came during the stall going on, which has not landed since.
    stop_sent_at: float | None = None

    def elapsed_at(self, clock_time: float) -> float:
        return clock_time - self.started_at


@dataclass(frozen=True)
class PanelView:
    """Everything one redraw of the panel needs, so rendering is a pure function of it.

    ``notes`` are one-line statuses: why telemetry is missing, or the sampler's own error.
    ``ended_with``: once finished, the type of the exception the cell ended with (``None``: it
    did not fail; empty: not known). ``stall_as_card``: a frontend shows the stall as a card of
    its own (the lab extension), so the panel does not repeat it.
    """

    source_kind: str
    source_summary: str
    devices: tuple[DeviceInfo, ...]
    history: tuple[Sample, ...]
    peaks: tuple[DevicePeak, ...]
    elapsed_s: float
    finished: bool = False
    notes: tuple[str, ...] = ()
    watch: WatchView | None = None
    ended_with: str | None = ""
    stall_as_card: bool = False

    @property
    def latest(self) -> Sample | None:
        return self.history[-1] if self.history else None

    def latest_of(self, index: int) -> DeviceSample | None:
        latest = self.latest
        if latest is None:
            return None
        return next((device for device in latest.devices if device.index == index), None)

    def peak_of(self, index: int) -> DevicePeak | None:
        return next((peak for peak in self.peaks if peak.index == index), None)

    def simulated(self, index: int) -> bool:
        return any(info.simulated for info in self.devices if info.index == index)

    def gpus_during(self, stall: Stall) -> tuple[GpuDuringStall, ...]:
        """Each device's mean utilisation from the stall's start on."""
        assert self.watch is not None
        since = self.watch.elapsed_at(stall.started_at)
        return tuple(
            GpuDuringStall(index, percent, self.simulated(index))
            for index, percent in sorted(self.utilisation_since(since).items())
        )

    def hang_evidence(self) -> HangEvidence | None:
        """What the watchdog saw, for a hang's diagnosis; ``None`` without a watchdog."""
        watch = self.watch
        if watch is None:
            return None
        stall = watch.stall
        if stall is None:
            return HangEvidence(watch.progress.step_times[-8:], step_warning=watch.step_warning)
        until = stall.resumed_at if stall.resumed_at is not None else watch.now
        return HangEvidence(
            stall.step_times,
            stall,
            until - stall.started_at,
            self.gpus_during(stall),
            watch.step_warning,
        )

    def utilisation_since(self, elapsed_s: float) -> dict[int, float]:
        """Each device's mean utilisation (percent) over the samples from ``elapsed_s`` on."""
        readings: dict[int, list[int]] = {}
        for sample in self.history:
            if sample.elapsed_s < elapsed_s:
                continue
            for device in sample.devices:
                if device.device.utilization_percent is not None:
                    readings.setdefault(device.index, []).append(device.device.utilization_percent)
        return {index: sum(values) / len(values) for index, values in readings.items()}


def device_series(view: PanelView, info: DeviceInfo) -> DeviceSeries:
    """One device's memory over the run, as the card's chart data."""
    samples = [
        (sample.elapsed_s, device)
        for sample in view.history
        for device in sample.devices
        if device.index == info.index
    ]
    frameworks = [device.allocator.framework for _, device in samples if device.allocator]
    return DeviceSeries(
        index=info.index,
        name=info.name,
        total_bytes=info.total_bytes,
        simulated=info.simulated,
        framework=frameworks[-1] if frameworks else None,
        elapsed_s=tuple(elapsed for elapsed, _ in samples),
        device_used_bytes=tuple(device.device.used_bytes for _, device in samples),
        allocator_bytes=tuple(
            device.allocator.current_bytes if device.allocator else None for _, device in samples
        ),
    )


def device_fraction(info: DeviceInfo, sample: DeviceSample | None) -> float | None:
    """How full a device's memory is, by its latest reading; ``None`` when it cannot say."""
    reading = sample.device if sample else None
    total = (reading.total_bytes if reading else None) or info.total_bytes
    return used_fraction(reading.used_bytes if reading else None, total)


def used_fraction(used_bytes: int | None, total_bytes: int | None) -> float | None:
    if used_bytes is None or not total_bytes:
        return None
    return min(1.0, used_bytes / total_bytes)


def bar_style(fraction: float | None) -> str:
    """A memory bar's style: plain, then ``warning``, then ``danger``."""
    if fraction is None or fraction < WARNING_FRACTION:
        return ""
    return "warning" if fraction < DANGER_FRACTION else "danger"
