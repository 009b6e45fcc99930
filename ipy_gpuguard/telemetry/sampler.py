"""The sampling thread, and the bounded history it fills while a guarded cell runs."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from .backend import DeviceBackend
from .framework import FrameworkAllocators
from .model import AllocatorReading, DeviceReading, DeviceSample, Sample

SampleListener = Callable[[Sample], None]


@dataclass(frozen=True)
class DevicePeak:
    """The highest memory one device reached during the cell, by each view."""

    index: int
    device_used_bytes: int | None = None
    allocator_peak_bytes: int | None = None
    #: Whose allocator reached ``allocator_peak_bytes`` ("TensorFlow", "JAX", "PyTorch").
    allocator_framework: str | None = None


class SampleHistory:
    """Samples of one cell, bounded in memory however long the cell runs.

    A plain ring buffer would forget the start of a long run, yet the chart spans the whole run:
    when the buffer is full it keeps every other sample and from then on takes every second one
    (then every fourth, ...). Peaks are tracked from every sample, so thinning never loses them.
    """

    def __init__(self, capacity: int = 240) -> None:
        self._capacity = capacity
        self._samples: list[Sample] = []
        self._stride = 1
        self._offered = 0
        self._peaks: dict[int, DevicePeak] = {}
        self._lock = threading.Lock()

    def add(self, sample: Sample) -> None:
        with self._lock:
            for device in sample.devices:
                self._peaks[device.index] = _raise_peak(
                    self._peaks.get(device.index, DevicePeak(device.index)), device
                )
            self._offered += 1
            if (self._offered - 1) % self._stride:
                return
            if len(self._samples) == self._capacity:
                self._samples = self._samples[::2]
                self._stride *= 2
            self._samples.append(sample)

    def samples(self) -> list[Sample]:
        with self._lock:
            return list(self._samples)

    def peaks(self) -> tuple[DevicePeak, ...]:
        with self._lock:
            return tuple(self._peaks[index] for index in sorted(self._peaks))

    def __len__(self) -> int:
        with self._lock:
            return self._offered


def _raise_peak(peak: DevicePeak, device: DeviceSample) -> DevicePeak:
    peak = replace(peak, device_used_bytes=_max(peak.device_used_bytes, device.device.used_bytes))
    reading = device.allocator
    if reading is not None and (
        peak.allocator_peak_bytes is None or reading.peak_bytes >= peak.allocator_peak_bytes
    ):
        peak = replace(
            peak, allocator_peak_bytes=reading.peak_bytes, allocator_framework=reading.framework
        )
    return peak


def _max(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


class Sampler:
    """A named daemon thread that reads the devices every ``interval_s`` seconds.

    The schedule is kept against the clock (a slow read does not push every later sample back),
    missed ticks are skipped rather than bunched, and any error, the backend's or a listener's,
    is caught and kept in :attr:`error` for the panel's status line: the thread never prints.
    """

    def __init__(
        self,
        backend: DeviceBackend,
        allocators: FrameworkAllocators,
        indices: Sequence[int],
        interval_s: float,
        listener: SampleListener | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.history = SampleHistory()
        self.error: str | None = None
        self._backend = backend
        self._allocators = allocators
        self._indices = tuple(indices)
        self._interval_s = interval_s
        self._listener = listener
        self._clock = clock
        self._started_at = clock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ipy_gpuguard-sampler", daemon=True)

    @property
    def elapsed_s(self) -> float:
        return self._clock() - self._started_at

    def start(self) -> None:
        self._started_at = self._clock()
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread, then take one last sample so the summary includes the end state."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self._record(notify=False)

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        next_tick = self._clock()
        while not self._stop.is_set():
            self._record(notify=True)
            next_tick += self._interval_s
            now = self._clock()
            if next_tick < now:
                missed = int((now - next_tick) / self._interval_s) + 1
                next_tick += missed * self._interval_s
            self._stop.wait(next_tick - now)

    def _record(self, notify: bool) -> None:
        try:
            sample = self._take_sample()
            self.history.add(sample)
            if notify and self._listener is not None:
                self._listener(sample)
        except Exception as error:  # the thread's own failure must not end the cell
            if self.error is None:
                self.error = f"{type(error).__name__}: {error}"

    def _take_sample(self) -> Sample:
        devices = tuple(
            DeviceSample(index=index, device=self._read(index), allocator=self._allocator(index))
            for index in self._indices
        )
        return Sample(elapsed_s=self.elapsed_s, devices=devices)

    def _read(self, index: int) -> DeviceReading:
        """The device's reading; a backend that raises loses this reading only, with why."""
        try:
            return self._backend.read(index)
        except Exception as error:
            return DeviceReading(
                memory_missing=f"the reading failed: {type(error).__name__}: {error}"
            )

    def _allocator(self, index: int) -> AllocatorReading | None:
        """The framework's figures; one that raises is unknown this time (the panel says n/a)."""
        try:
            return self._allocators.read(index)
        except Exception:
            return None
