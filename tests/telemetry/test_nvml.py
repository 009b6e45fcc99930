from __future__ import annotations

import os
import sys

import pynvml
import pytest

from ipy_gpuguard.telemetry import TelemetryUnavailable
from ipy_gpuguard.telemetry.nvml import (
    FIRST_PID_NAMESPACE,
    GPU_IS_LOST,
    PROCESS_LISTS,
    NvmlBackend,
    listed_pid,
)

from .fake_pynvml import FakeGpu, make_fake_nvml

GIB = 1024**3


def open_fake(gpus, visible=None, init_error=None):
    nvml = make_fake_nvml(gpus, init_error=init_error)
    return NvmlBackend.open(nvml, cuda_visible_devices=visible, own_pid=os.getpid), nvml


def test_reads_memory_utilisation_temperature_and_power():
    backend, _ = open_fake([FakeGpu(used_bytes=3 * GIB, utilization_percent=91, temperature_c=71)])
    reading = backend.read(0)
    assert reading.used_bytes == 3 * GIB
    assert reading.total_bytes == 80 * GIB
    assert reading.utilization_percent == 91
    assert reading.temperature_c == 71
    assert reading.power_watts == pytest.approx(212.0)
    assert backend.devices()[0].name == "NVIDIA A100-SXM4-80GB"
    assert backend.summary == "NVML, driver 550.54.15"


def test_other_processes_holding_memory_are_listed_without_this_one():
    gpu = FakeGpu(processes=[(4242, 12 * GIB), (os.getpid(), 3 * GIB), (77, None)])
    backend, _ = open_fake([gpu])
    assert backend.other_processes(0) == ((4242, 12 * GIB),)
    unsupported, _ = open_fake([FakeGpu(unsupported={"nvmlDeviceGetComputeRunningProcesses"})])
    assert unsupported.other_processes(0) == ()


def test_the_total_held_by_others_is_summed_where_nvml_lists_this_process_too():
    """A process in both lists counts once; one whose memory NVML cannot tell (WDDM) as none."""
    gpu = FakeGpu(
        processes=[(4242, 12 * GIB), (os.getpid(), 3 * GIB), (77, None)],
        graphics_processes=[(4242, 12 * GIB), (88, 1 * GIB)],
    )
    backend, _ = open_fake([gpu])
    assert backend.bytes_held_by_others(0) == 13 * GIB


def test_the_total_held_by_others_is_unknown_where_this_process_is_not_listed():
    """A process that has not used the GPU yet is not listed: what the others hold is then
    not known to leave this one the rest, though each of them is another."""
    not_yet, _ = open_fake([FakeGpu(processes=[(91234, 12 * GIB), (91300, 2 * GIB)])])
    assert not_yet.bytes_held_by_others(0) is None
    assert not_yet.other_processes(0) == ((91234, 12 * GIB), (91300, 2 * GIB))
    unsupported, _ = open_fake([FakeGpu(unsupported=set(PROCESS_LISTS))])
    assert unsupported.bytes_held_by_others(0) is None


def test_in_a_container_no_listed_process_is_named_as_another():
    """NVML lists the host's PIDs in a container, this kernel's among them: naming one as
    "another process" blamed the person's own kernel in the card and the doctor."""
    nvml = make_fake_nvml([FakeGpu(processes=[(91234, 12 * GIB), (91300, 2 * GIB)])])
    in_a_container = NvmlBackend.open(nvml, cuda_visible_devices=None, own_pid=lambda: None)
    assert in_a_container.other_processes(0) == ()
    assert in_a_container.bytes_held_by_others(0) is None


def test_this_process_is_listed_by_its_pid_only_in_the_first_pid_namespace(monkeypatch):
    monkeypatch.setattr(sys, "platform", "linux")
    assert listed_pid(lambda: FIRST_PID_NAMESPACE) == os.getpid()
    assert listed_pid(lambda: "pid:[4026532513]") is None  # a container's
    assert listed_pid(_unreadable) == os.getpid()
    monkeypatch.setattr(sys, "platform", "win32")
    assert listed_pid(lambda: "pid:[4026532513]") == os.getpid()  # no PID namespaces there


def _unreadable() -> str:
    raise PermissionError("/proc/self/ns/pid")


def test_a_value_the_gpu_does_not_report_is_unknown_not_an_error():
    backend, _ = open_fake(
        [FakeGpu(unsupported={"nvmlDeviceGetTemperature", "nvmlDeviceGetPowerUsage"})]
    )
    reading = backend.read(0)
    assert reading.temperature_c is None
    assert reading.power_watts is None
    assert reading.used_bytes == 1 * GIB


@pytest.mark.parametrize(
    ("code", "explanation"),
    [
        (pynvml.NVML_ERROR_LIBRARY_NOT_FOUND, "NVML library not found"),
        (pynvml.NVML_ERROR_DRIVER_NOT_LOADED, "driver is installed but not loaded"),
        (pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH, "different versions"),
        (pynvml.NVML_ERROR_NO_PERMISSION, "no permission"),
        (pynvml.NVML_ERROR_UNKNOWN, "NVML failed to start: Unknown Error"),
    ],
)
def test_each_init_failure_is_explained(code, explanation):
    with pytest.raises(TelemetryUnavailable, match=explanation):
        open_fake([FakeGpu()], init_error=code)


def test_the_real_library_is_missing_here_and_says_so():
    """This machine has no NVIDIA driver: the real nvidia-ml-py raises LibraryNotFound."""
    try:
        backend = NvmlBackend.open()
    except TelemetryUnavailable as error:
        assert "NVML library not found" in str(error)  # noqa: PT017 - raises only without a GPU
    else:  # pragma: no cover - a machine with a GPU
        assert backend.devices()
        backend.close()


def test_no_device_is_its_own_state():
    with pytest.raises(TelemetryUnavailable, match="sees no NVIDIA GPU"):
        open_fake([])


def test_empty_cuda_visible_devices_hides_every_gpu():
    with pytest.raises(TelemetryUnavailable, match=r"CUDA_VISIBLE_DEVICES='' hides all 2 GPU"):
        open_fake([FakeGpu(uuid="GPU-a"), FakeGpu(uuid="GPU-b")], visible="")


def test_cuda_visible_devices_maps_framework_indices_to_nvml_devices():
    gpus = [
        FakeGpu(name="zero", uuid="GPU-aa"),
        FakeGpu(name="one", uuid="GPU-bb"),
        FakeGpu(name="two", uuid="GPU-cc"),
    ]
    backend, _ = open_fake(gpus, visible="2,GPU-aa")
    assert [info.name for info in backend.devices()] == ["two", "zero"]
    assert [info.index for info in backend.devices()] == [0, 1]


def test_mig_instances_are_addressed_by_their_uuid():
    mig = FakeGpu(
        name="MIG 1g.10gb",
        uuid="MIG-1234",
        total_bytes=10 * GIB,
        unsupported={"nvmlDeviceGetUtilizationRates"},
    )
    backend, _ = open_fake([FakeGpu(uuid="GPU-parent", migs=[mig])], visible="MIG-1234")
    assert backend.devices()[0].total_bytes == 10 * GIB
    assert backend.read(0).utilization_percent is None


def test_a_lost_gpu_is_explained_and_no_longer_queried():
    gpu = FakeGpu()
    backend, nvml = open_fake([gpu])
    gpu.lost = True
    assert backend.read(0).problem == GPU_IS_LOST
    calls = len(nvml.calls)
    assert backend.read(0).problem == GPU_IS_LOST
    assert len(nvml.calls) == calls


def test_handles_are_fetched_once_not_per_sample():
    backend, nvml = open_fake([FakeGpu(), FakeGpu(uuid="GPU-2")])
    fetched_at_open = nvml.calls.count("nvmlDeviceGetHandleByIndex")
    for _ in range(5):
        backend.read(0)
        backend.read(1)
    assert nvml.calls.count("nvmlDeviceGetHandleByIndex") == fetched_at_open


def test_after_close_reads_are_unknown_and_nvml_is_shut_down():
    backend, nvml = open_fake([FakeGpu()])
    backend.close()
    assert not nvml.initialised
    assert backend.read(0).used_bytes is None


@pytest.mark.gpu
def test_real_gpu_reports_memory():  # pragma: no cover - runs on the lent GPU machine only
    backend = NvmlBackend.open()
    try:
        reading = backend.read(0)
        assert reading.total_bytes is not None
        assert reading.total_bytes > 0
        assert reading.used_bytes is not None
        assert 0 <= reading.used_bytes <= reading.total_bytes
    finally:
        backend.close()


def test_a_reading_that_raises_anything_is_that_readings_failure_alone():
    """Issue 22 item 18: an ``OSError`` from the power reading stopped all telemetry; a
    memory reading of ``None`` had no reason."""
    backend, nvml = open_fake([FakeGpu(used_bytes=3 * GIB)])

    def broken_power(handle):
        raise OSError(5, "Input/output error")

    nvml.nvmlDeviceGetPowerUsage = broken_power
    reading = backend.read(0)
    assert reading.power_watts is None
    assert reading.used_bytes == 3 * GIB
    assert reading.temperature_c == 54
    nvml.nvmlDeviceGetMemoryInfo = lambda handle: None
    assert backend.read(0).memory_missing == "NVML could not read its memory (no figures given)"


@pytest.mark.parametrize("power", ["212000", b"212000", object(), True])
def test_a_figure_that_is_not_a_number_is_unknown_and_the_others_stay(power):
    """Issue 35 item 8: a power reading returned as a string dropped the memory reading too."""
    backend, nvml = open_fake([FakeGpu(used_bytes=3 * GIB, utilization_percent=91)])
    nvml.nvmlDeviceGetPowerUsage = lambda handle: power
    nvml.nvmlDeviceGetTemperature = lambda handle, sensor: "54 C"
    reading = backend.read(0)
    assert reading.power_watts is None
    assert reading.temperature_c is None
    assert reading.used_bytes == 3 * GIB
    assert reading.total_bytes == 80 * GIB
    assert reading.utilization_percent == 91


def test_a_process_list_that_raises_or_is_missing_lists_nobody():
    """Issue 22 item 18: an error from NVML's process list dropped the card."""
    backend, nvml = open_fake([FakeGpu(graphics_processes=[(4242, 2 * GIB)])])

    def broken(handle):
        raise RuntimeError("ctypes: function returned garbage")

    nvml.nvmlDeviceGetComputeRunningProcesses = broken
    assert backend.other_processes(0) == ((4242, 2 * GIB),)
    del nvml.nvmlDeviceGetGraphicsRunningProcesses  # an old nvidia-ml-py
    assert backend.other_processes(0) == ()
