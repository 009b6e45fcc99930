from __future__ import annotations

from ipy_gpuguard.telemetry.simulated import CONTEXT_BYTES, SimulatedBackend

GIB = 1024**3


class Process:
    def __init__(self):
        self.rss = 2 * GIB
        self.cpu = 0.0


def make(sizes=(8 * GIB,)):
    process = Process()
    backend = SimulatedBackend(
        sizes, rss_bytes=lambda: process.rss, cpu_percent=lambda: process.cpu
    )
    return backend, process


def test_used_memory_follows_the_process_growth_and_is_capped_at_total():
    backend, process = make()
    assert backend.read(0).used_bytes == CONTEXT_BYTES
    process.rss += 1 * GIB
    assert backend.read(0).used_bytes == CONTEXT_BYTES + GIB
    process.rss += 100 * GIB
    assert backend.read(0).used_bytes == 8 * GIB


def test_utilisation_follows_cpu_and_devices_are_labelled_simulated():
    backend, process = make((8 * GIB, 16 * GIB))
    process.cpu = 180.0  # two cores busy: a device cannot be more than 100% busy
    assert backend.read(0).utilization_percent == 100
    assert backend.read(1).utilization_percent == 0
    assert all(info.simulated and "Simulated" in info.name for info in backend.devices())
    assert [info.total_bytes for info in backend.devices()] == [8 * GIB, 16 * GIB]
    assert "simulated" in backend.summary


def test_the_real_process_is_read_by_default():
    backend = SimulatedBackend((8 * GIB,))
    keep = bytearray(256 * 1024**2)
    keep[::4096] = b"x" * len(keep[::4096])  # touch the pages so they are resident
    assert backend.read(0).used_bytes >= CONTEXT_BYTES + 200 * 1024**2
    del keep
