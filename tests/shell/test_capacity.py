"""The memory a guarded run's forecast, search and retry aim under: the device's, less what other
processes hold of it, less still where the framework's allocator is held to less. A real
``GuardedRun`` over NVML (the fake ``pynvml``) and JAX's allocator as an H200 answered."""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

import pytest

from ipy_gpuguard.record import Capacity
from ipy_gpuguard.shell.guarded_run import GuardedRun
from ipy_gpuguard.shell.options import GuardOptions
from ipy_gpuguard.telemetry.nvml import NvmlBackend
from tests.telemetry.fake_pynvml import FakeGpu, make_fake_nvml
from tests.telemetry.test_framework import FakeJaxDevice, fake_jax

GIB = 1024**3


def guarded(*gpus: FakeGpu, nvml: Any = None) -> GuardedRun:
    """A guarded run over the GPUs, after the sampler's first reading of what others hold."""
    run = unread(*gpus, nvml=nvml)
    run.read_held_by_others()
    return run


def unread(*gpus: FakeGpu, nvml: Any = None) -> GuardedRun:
    nvml = nvml or make_fake_nvml(list(gpus))
    backend = NvmlBackend.open(nvml, cuda_visible_devices=None, own_pid=os.getpid)
    return GuardedRun(backend, GuardOptions(show_panel=False), live=False, read_native_log=False)


@pytest.fixture(autouse=True)
def no_framework(monkeypatch):
    for name in ("jax", "torch", "tensorflow"):
        monkeypatch.delitem(sys.modules, name, raising=False)


def test_memory_another_kernel_holds_is_not_the_forecasts():
    """A second notebook's kernel holds 30 GiB of the 80: a batch sized for 80 would fail."""
    gpu = FakeGpu(processes=[(os.getpid(), 2 * GIB), (4242, 30 * GIB)])
    assert guarded(gpu).capacity_bytes() == 50 * GIB


def test_where_nvml_cannot_tell_others_from_this_process_the_device_is_whole():
    in_a_container = FakeGpu(processes=[(91234, 30 * GIB)])
    assert guarded(in_a_container).capacity_bytes() == 80 * GIB
    assert guarded(in_a_container).capacity().held_by_others_bytes == 0


def test_the_fullest_device_bounds_the_capacity():
    shared = FakeGpu(uuid="GPU-1", processes=[(os.getpid(), GIB), (4242, 70 * GIB)])
    run = guarded(FakeGpu(uuid="GPU-0", processes=[(os.getpid(), GIB), (77, GIB)]), shared)
    assert run.capacity_bytes() == 10 * GIB
    assert run.capacity().held_by_others_bytes == 70 * GIB  # of the device that bounds the capacity


def test_others_leave_less_than_jaxs_pool_or_more(monkeypatch):
    pool = 60 * GIB  # JAX's default: 75% of the device
    for name, module in fake_jax([FakeJaxDevice(GIB, peak=GIB, limit=pool)]).items():
        monkeypatch.setitem(sys.modules, name, module)
    roomy = guarded(FakeGpu(processes=[(os.getpid(), pool), (4242, 10 * GIB)]))
    assert roomy.capacity_bytes() == pool
    assert roomy.capacity().held_by_others_bytes == 0  # the pool, not the others, bounds it
    crowded = guarded(FakeGpu(processes=[(os.getpid(), pool), (4242, 30 * GIB)]))
    assert crowded.capacity_bytes() == 50 * GIB
    assert crowded.capacity().held_by_others_bytes == 30 * GIB


def test_others_said_to_hold_the_whole_device_or_more_leave_it_whole():
    """Bindings that misread NVML's structures gave another process 200 GiB of an 80 GiB GPU:
    the capacity was 0, and the forecast said every step would run out of memory."""
    misread = FakeGpu(processes=[(os.getpid(), GIB), (4242, 200 * GIB)])
    assert guarded(misread).capacity() == Capacity(80 * GIB, 0)


def test_the_capacity_reads_no_nvml_on_the_persons_thread():
    """NVML's process lists are read on the sampler's thread: a call that stalls there (a hung
    driver, the sampler inside a slow call) held a fit's first step for 25 s, and a watchdog
    that interrupts blamed the person's cell with the guard's own frames."""
    gpu = FakeGpu(processes=[(os.getpid(), GIB), (4242, 30 * GIB)])
    nvml = make_fake_nvml([gpu])
    listing, release = threading.Event(), threading.Event()
    list_processes = nvml.nvmlDeviceGetComputeRunningProcesses

    def stalled(handle: Any) -> Any:
        listing.set()
        release.wait()
        return list_processes(handle)

    nvml.nvmlDeviceGetComputeRunningProcesses = stalled
    run = unread(gpu, nvml=nvml)
    sampler = threading.Thread(target=run.read_held_by_others)
    sampler.start()
    listing.wait()
    try:
        assert run.capacity() == Capacity(80 * GIB, 0)  # not read yet: the device whole
    finally:
        release.set()
        sampler.join()
    assert run.capacity() == Capacity(50 * GIB, 30 * GIB)


def test_a_reading_that_fails_leaves_that_device_whole():
    gpu = FakeGpu(processes=[(os.getpid(), GIB), (4242, 30 * GIB)])
    nvml = make_fake_nvml([gpu])

    class Misread:
        pid = 4242

        @property
        def usedGpuMemory(self) -> int:  # noqa: N802 (NVML's name)
            raise TypeError("a structure of another driver's layout")

    nvml.nvmlDeviceGetGraphicsRunningProcesses = lambda handle: [Misread()]
    assert guarded(gpu, nvml=nvml).capacity() == Capacity(80 * GIB, 0)
