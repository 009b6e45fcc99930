"""The memory a guarded run's forecast, search and retry aim under: the device's, less what other
processes hold of it, less still where the framework's allocator is held to less. A real
``GuardedRun`` over NVML (the fake ``pynvml``) and JAX's allocator as an H200 answered."""

from __future__ import annotations

import os
import sys

import pytest

from ipy_gpuguard.shell.guarded_run import GuardedRun
from ipy_gpuguard.shell.options import GuardOptions
from ipy_gpuguard.telemetry.nvml import NvmlBackend
from tests.telemetry.fake_pynvml import FakeGpu, make_fake_nvml
from tests.telemetry.test_framework import FakeJaxDevice, fake_jax

GIB = 1024**3


def guarded(*gpus: FakeGpu) -> GuardedRun:
    backend = NvmlBackend.open(
        make_fake_nvml(list(gpus)), cuda_visible_devices=None, own_pid=os.getpid
    )
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
