"""A guarded run over a GPU whose memory JAX holds in a pool: what the forecast and the search are
given of it. JAX's allocator answers as on an H200 (``memory_stats()``); no GPU is needed."""

from __future__ import annotations

import sys

import pytest

from ipy_gpuguard.shell.guarded_run import GuardedRun
from ipy_gpuguard.shell.options import GuardOptions
from ipy_gpuguard.telemetry import DeviceInfo
from ipy_gpuguard.telemetry.backend import NoTelemetry
from tests.telemetry.test_framework import FakeJaxDevice, fake_jax

H200_BYTES = 150_754_820_096  # NVML's total on the H200 the figures come from
POOL_BYTES = 2_139_095_040  # JAX's bytes_limit there under a 2 GiB memory fraction


class OneGpu(NoTelemetry):
    kind = "nvml"

    def __init__(self) -> None:
        super().__init__("one GPU")

    def devices(self) -> tuple[DeviceInfo, ...]:
        return (DeviceInfo(0, "NVIDIA H200", H200_BYTES),)


@pytest.fixture
def jax_gpu(monkeypatch):
    device = FakeJaxDevice(17 * 2**20, peak=600 * 2**20, limit=POOL_BYTES)
    for name, module in fake_jax([device]).items():
        monkeypatch.setitem(sys.modules, name, module)
    return device


def guarded() -> GuardedRun:
    return GuardedRun(OneGpu(), GuardOptions(show_panel=False), live=False, read_native_log=False)


def test_the_capacity_is_jaxs_pool_not_the_whole_gpu(jax_gpu):
    assert guarded().capacity_bytes() == POOL_BYTES


def test_the_capacity_is_the_gpus_where_no_framework_holds_it_to_less(monkeypatch):
    monkeypatch.delitem(sys.modules, "jax", raising=False)
    assert guarded().capacity_bytes() == H200_BYTES


def test_a_probe_reads_no_peak_until_jaxs_mark_rises_past_the_last(jax_gpu):
    """A probe after an out-of-memory attempt peaks below the process' mark: the bytes in use
    after its steps are not its peak, and a line through them would propose a crash."""
    peaks = guarded().probe_peaks()
    peaks.reset()
    assert peaks.read() is None
    assert peaks.held() == 17 * 2**20
    jax_gpu.peak = 700 * 2**20
    assert peaks.read() == 700 * 2**20
