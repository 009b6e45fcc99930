"""The meter's reading: kernels' shares from NVML's process list, one reading a second, NVML
only in a worker thread, and what it says when it cannot attribute or read anything."""

from __future__ import annotations

import asyncio
import json
import threading

from ipy_gpuguard.protocol import state_path, to_json
from ipy_gpuguard.server.meter import NOT_ATTRIBUTABLE, Meter, process_tree
from ipy_gpuguard.telemetry import DeviceInfo, DeviceReading, NoTelemetry

from ..protocol.validate import assert_valid

GIB = 2**30


class FakeNvml:
    """Two GPUs; a kernel (pid 100, child 101) and another process (pid 7) hold memory."""

    kind = "nvml"
    summary = "NVML 12.0, driver 550"

    def __init__(self):
        self.threads = []

    def devices(self):
        return (DeviceInfo(0, "H100", 80 * GIB), DeviceInfo(1, "H100", 80 * GIB))

    def read(self, index):
        self.threads.append(threading.current_thread())
        return DeviceReading(used_bytes=(10 + index) * GIB, total_bytes=80 * GIB)

    def other_processes(self, index):
        return ((100, 4 * GIB), (101, 1 * GIB), (7, 2 * GIB)) if index == 0 else ((100, 3 * GIB),)

    def close(self):
        pass


class Clock:
    now = 0.0

    def __call__(self):
        return self.now


def test_each_kernel_gets_the_memory_of_its_processes_on_every_gpu():
    meter = Meter(lambda spec: FakeNvml(), "", pid_exists=lambda pid: True)
    reading = meter.read({"k1": (100, 101), "k2": (200,)})
    assert_valid("MeterReading", to_json(reading))
    shares = {share.kernel_id: share.used_bytes for share in reading.kernels}
    assert shares == {"k1": 8 * GIB, "k2": 0}
    assert reading.attribution is None
    assert [device.used_bytes for device in reading.devices] == [10 * GIB, 11 * GIB]


def test_pids_of_another_namespace_are_said_not_counted_as_zero():
    meter = Meter(lambda spec: FakeNvml(), "", pid_exists=lambda pid: False)
    reading = meter.read({"k1": (100,)})
    assert reading.attribution == NOT_ATTRIBUTABLE
    assert reading.kernels == ()


def test_without_nvml_the_reason_is_one_line():
    meter = Meter(lambda spec: NoTelemetry("NVML library not found (libnvidia-ml.so.1)"), "")
    reading = meter.read({})
    assert reading.source == "none"
    assert reading.reason == "NVML library not found (libnvidia-ml.so.1)"
    assert reading.devices == ()


def test_one_reading_a_second_taken_off_the_event_loop(monkeypatch):
    nvml, clock = FakeNvml(), Clock()
    meter = Meter(lambda spec: nvml, "", pid_exists=lambda pid: True, clock=clock)
    walks = []  # psutil's process tree scans every process: never on the loop, once a reading
    monkeypatch.setattr(
        "ipy_gpuguard.server.meter.process_tree",
        lambda pid: walks.append(threading.current_thread()) or (pid, pid + 1),
    )

    async def clients():
        loop_thread = threading.current_thread()
        first = await meter.reading({"k1": 100})
        again = await meter.reading({"k1": 100})  # another client within the second: the same
        clock.now = 1.0
        stale = await meter.reading({"k1": 100})  # the last reading, while the next is taken
        while meter._taking is not None:
            await asyncio.sleep(0.01)
        later = await meter.reading({"k1": 100})
        return loop_thread, first, again, stale, later

    loop_thread, first, again, stale, later = asyncio.run(clients())
    assert again is first
    assert stale is first
    assert later is not first
    assert len(nvml.threads) == 4  # two readings of two GPUs
    assert loop_thread not in nvml.threads
    assert len(walks) == 2
    assert loop_thread not in walks
    assert first.kernels[0].pids == (100, 101)


class FakeSimulated(FakeNvml):
    kind = "simulated"
    summary = "simulated device(s): 8.00 GiB"

    def other_processes(self, index):
        return ()


def recorded(pid, used):
    """A kernel's whole state record, as it writes one, with each device's ``used`` bytes."""
    devices = [
        {
            "index": index,
            "name": f"Simulated GPU {index}",
            "simulated": True,
            "used_bytes": used_bytes,
            "total_bytes": 8 * GIB,
            "allocator_bytes": None,
            "utilization_percent": None,
            "temperature_c": None,
        }
        for index, used_bytes in enumerate(used)
    ]
    return json.dumps(
        {
            "pid": pid,
            "kernel_id": None,
            "updated_at": 1.0,
            "running": False,
            "cell": None,
            "phase": None,
            "step": 0,
            "last_step_at": None,
            "devices": devices,
            "last_rule_id": None,
            "outcome": None,
        }
    )


def test_a_kernels_share_of_a_simulated_gpu_is_what_it_recorded(tmp_path):
    state_path(tmp_path, "k1").parent.mkdir()
    state_path(tmp_path, "k1").write_text(recorded(100, [GIB, None]))
    meter = Meter(
        lambda spec: FakeSimulated(), "8GiB", pid_exists=lambda p: True, runtime_dir=str(tmp_path)
    )
    reading = meter.read({"k1": (100,), "k2": (200,)})
    assert [(share.kernel_id, share.used_bytes) for share in reading.kernels] == [("k1", GIB)]


def test_the_kernels_shares_never_exceed_what_the_simulated_device_holds(tmp_path):
    """Issue 21: the kernels added up to more than the device held (it showed the server's
    own memory, which no kernel's share is part of)."""
    state_path(tmp_path, "k1").parent.mkdir()
    for kernel_id, pid in (("k1", 100), ("k2", 200)):
        state_path(tmp_path, kernel_id).write_text(recorded(pid, [3 * GIB]))
    meter = Meter(
        lambda spec: FakeSimulated(), "8GiB", pid_exists=lambda p: True, runtime_dir=str(tmp_path)
    )
    reading = meter.read({"k1": (100,), "k2": (200,)})
    assert sum(share.used_bytes for share in reading.kernels) == 6 * GIB
    assert sum(device.used_bytes for device in reading.devices) == 6 * GIB


def test_a_dead_kernels_share_goes_at_once(tmp_path):
    """Issue 21: a dead kernel's share was still shown 40 s after it died: its record stays
    until the restarted kernel writes one, and no process of the kernel holds anything."""
    state_path(tmp_path, "k1").parent.mkdir()
    state_path(tmp_path, "k1").write_text(
        f'{{"pid": 100, "devices": [{{"index": 0, "used_bytes": {GIB}}}]}}'
    )
    meter = Meter(
        lambda spec: FakeSimulated(), "8GiB", pid_exists=lambda p: True, runtime_dir=str(tmp_path)
    )
    assert meter.read({"k1": ()}).kernels == ()  # its process is gone
    assert meter.read({"k1": (300,)}).kernels == ()  # restarted: another process


def test_the_process_tree_of_a_dead_kernel_is_empty():
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert process_tree(child.pid) == ()
