"""The GPU's own watchdog, read through replaced inputs for each platform and driver model."""

from __future__ import annotations

import pytest

from ipy_gpuguard.telemetry import DeviceInfo
from ipy_gpuguard.watchdog import SystemTimeoutProbe, step_warning
from ipy_gpuguard.watchdog.gpu_timeout import KERNEL_EXEC_TIMEOUT

from .fakes import NVML_DRIVER_TCC, NVML_DRIVER_WDDM, FakeCudaRuntime, fake_nvml

GPU = (DeviceInfo(index=0, name="NVIDIA RTX 3060", total_bytes=12 * 2**30, uuid="GPU-1"),)


def windows(registry, driver_model=NVML_DRIVER_WDDM, display=True):
    return SystemTimeoutProbe(
        platform="win32",
        read_registry=lambda: registry,
        nvml=fake_nvml(driver_model, display),
        load_library=lambda name: pytest.fail("Windows reads the registry, not CUDA"),
    )


def test_a_wddm_display_gpu_without_registry_values_is_reset_after_two_seconds():
    (timeout,) = windows({}).timeouts(GPU)
    assert timeout.active is True
    assert timeout.limit_s == 2.0
    assert "WDDM GPU and drives a display" in timeout.reason
    assert "Windows' default" in timeout.reason


def test_tdr_delay_from_the_registry_sets_the_limit():
    (timeout,) = windows({"TdrDelay": 10}, display=False).timeouts(GPU)
    assert timeout.limit_s == 10.0
    assert "drives a display" not in timeout.reason


def test_tdr_level_zero_turns_the_reset_off():
    (timeout,) = windows({"TdrDelay": 2, "TdrLevel": 0}).timeouts(GPU)
    assert timeout.active is False
    assert "TdrLevel 0" in timeout.reason


def test_a_tcc_gpu_has_no_display_watchdog():
    (timeout,) = windows({"TdrDelay": 2}, driver_model=NVML_DRIVER_TCC).timeouts(GPU)
    assert timeout.active is False
    assert timeout.limit_s is None
    assert timeout.reason.startswith("TCC")


@pytest.mark.parametrize("enabled", [True, False])
def test_linux_reads_cudas_kernel_exec_timeout_attribute(enabled):
    runtime = FakeCudaRuntime(enabled)
    probe = SystemTimeoutProbe(
        platform="linux", nvml=fake_nvml(None, enabled), load_library=lambda name: runtime
    )
    (timeout,) = probe.timeouts(GPU)
    assert runtime.asked == [(KERNEL_EXEC_TIMEOUT, 0)]
    assert timeout.active is enabled
    assert (timeout.limit_s is not None) is enabled


def test_no_loadable_cuda_library_is_could_not_check_with_the_reason():
    def missing(name):
        raise OSError(f"{name}: cannot open shared object file")

    probe = SystemTimeoutProbe(platform="linux", nvml=fake_nvml(None, False), load_library=missing)
    (timeout,) = probe.timeouts(GPU)
    assert timeout.active is None
    assert "no CUDA library could be loaded" in timeout.reason
    assert timeout.text.startswith("GPU 0 · watchdog could not check")


def test_a_cuda_error_is_could_not_check():
    probe = SystemTimeoutProbe(
        platform="linux",
        nvml=fake_nvml(None, False),
        load_library=lambda name: FakeCudaRuntime(False, status=100),
    )
    (timeout,) = probe.timeouts(GPU)
    assert timeout.active is None
    assert "error 100" in timeout.reason


def test_the_warning_starts_above_half_the_limit():
    timeouts = windows({"TdrDelay": 2}).timeouts(GPU)
    assert step_warning(0.9, timeouts) is None
    warning = step_warning(1.2, timeouts)
    assert warning is not None
    assert warning.startswith("steps take 1.2 s; this GPU is reset after 2 s")
    assert step_warning(5.0, windows({"TdrLevel": 0}).timeouts(GPU)) is None
