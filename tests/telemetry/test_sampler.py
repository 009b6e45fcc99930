from __future__ import annotations

import itertools
import threading
import time

from ipy_gpuguard.telemetry import (
    AllocatorReading,
    DeviceReading,
    DeviceSample,
    FrameworkAllocators,
    Sample,
    SampleHistory,
    Sampler,
)
from ipy_gpuguard.telemetry.simulated import SimulatedBackend

GIB = 1024**3


def sample(elapsed, used, allocator_peak=None):
    allocator = (
        AllocatorReading("TensorFlow", 0, allocator_peak) if allocator_peak is not None else None
    )
    return Sample(elapsed, (DeviceSample(0, DeviceReading(used_bytes=used), allocator),))


def test_history_stays_bounded_and_spans_the_whole_run():
    history = SampleHistory(capacity=16)
    for step in range(1000):
        history.add(sample(float(step), step))
    kept = history.samples()
    assert len(kept) <= 16
    assert kept[0].elapsed_s == 0.0
    assert kept[-1].elapsed_s > 900
    assert len(history) == 1000


def test_peaks_come_from_every_sample_even_those_thinned_out():
    history = SampleHistory(capacity=4)
    for step in range(100):
        history.add(
            sample(float(step), 50 if step != 37 else 999, allocator_peak=7 if step != 61 else 123)
        )
    (peak,) = history.peaks()
    assert peak.device_used_bytes == 999
    assert peak.allocator_peak_bytes == 123


def test_a_peak_keeps_the_name_of_the_allocator_that_reached_it():
    """A card names whose allocator's peak it quotes: the one read as the peak was reached,
    not whichever is read after the cell (the allocator read may change as memory moves)."""
    history = SampleHistory(capacity=4)
    for elapsed, framework, peak_bytes in (
        (0.0, "TensorFlow", 10),
        (1.0, "JAX", 90),
        (2.0, "TensorFlow", 20),
    ):
        reading = AllocatorReading(framework, 0, peak_bytes)
        history.add(Sample(elapsed, (DeviceSample(0, DeviceReading(used_bytes=1), reading),)))
    (peak,) = history.peaks()
    assert (peak.allocator_peak_bytes, peak.allocator_framework) == (90, "JAX")


class CountingBackend(SimulatedBackend):
    def __init__(self):
        super().__init__((8 * GIB,), rss_bytes=lambda: 0, cpu_percent=lambda: 0.0)
        self.reads = 0

    def read(self, index):
        self.reads += 1
        return super().read(index)


def test_sampler_thread_samples_at_the_interval_and_stops():
    backend = CountingBackend()
    sampler = Sampler(backend, FrameworkAllocators(modules={}), [0], interval_s=0.05)
    sampler.start()
    time.sleep(0.5)
    sampler.stop()
    assert not sampler.is_alive()
    assert 7 <= backend.reads <= 13  # about 10 ticks plus the final sample
    assert not [t for t in threading.enumerate() if t.name == "ipy_gpuguard-sampler"]


def test_a_failing_listener_is_reported_once_and_sampling_goes_on():
    calls = []

    def listener(_sample):
        calls.append(1)
        raise RuntimeError("widget is gone")

    sampler = Sampler(
        CountingBackend(), FrameworkAllocators(modules={}), [0], 0.05, listener=listener
    )
    sampler.start()
    time.sleep(0.3)
    sampler.stop()
    assert sampler.error == "RuntimeError: widget is gone"
    assert len(calls) >= 3


def test_a_slow_read_does_not_bunch_later_samples():
    """Drift compensation: after a read that took 3 intervals, missed ticks are skipped."""
    times = []

    class Slow(CountingBackend):
        def read(self, index):
            times.append(time.monotonic())
            if len(times) == 2:
                time.sleep(0.3)
            return super().read(index)

    sampler = Sampler(Slow(), FrameworkAllocators(modules={}), [0], interval_s=0.1)
    sampler.start()
    time.sleep(0.75)
    sampler.stop()
    gaps = [b - a for a, b in itertools.pairwise(times[2:-1])]
    assert gaps
    assert min(gaps) > 0.05  # no burst of catch-up samples


class HalfBrokenBackend(CountingBackend):
    """Device 1's reading raises; device 0 reads as ever."""

    def read(self, index):
        if index == 1:
            raise OSError(5, "Input/output error")
        return super().read(index)


def test_a_device_whose_reading_raises_loses_that_reading_only():
    """Issue 22 item 18: an ``OSError`` from one reading stopped all telemetry."""
    sampler = Sampler(HalfBrokenBackend(), FrameworkAllocators(modules={}), [0, 1], 0.05)
    sampler.start()
    sampler.stop()  # the thread's samples, if it took any, and the final one
    samples = sampler.history.samples()
    first, second = samples[-1].devices
    assert first.device.used_bytes is not None
    assert (
        second.device.memory_missing == "the reading failed: OSError: [Errno 5] Input/output error"
    )
    assert sampler.error is None
