from __future__ import annotations

from ipy_gpuguard.telemetry import TelemetryUnavailable, open_backend
from ipy_gpuguard.telemetry.backend import NoTelemetry


def no_nvml():
    raise TelemetryUnavailable("NVML library not found")


def test_nvml_wins_when_it_sees_a_gpu():
    real = NoTelemetry("stand-in for a working NVML backend")
    assert open_backend("8GiB", open_nvml=lambda: real) is real


def test_simulated_when_asked_and_no_gpu():
    backend = open_backend("8GiB,16GiB", open_nvml=no_nvml)
    assert backend.kind == "simulated"
    assert len(backend.devices()) == 2


def test_none_with_the_reason_and_a_hint():
    backend = open_backend("", open_nvml=no_nvml)
    assert backend.kind == "none"
    assert backend.summary.startswith("no GPU telemetry: NVML library not found")
    assert "GPUGUARD_SIMULATE=8GiB" in backend.summary


def test_a_bad_simulate_value_is_one_clear_line():
    backend = open_backend("8 gigs", open_nvml=no_nvml)
    assert backend.kind == "none"
    assert "'8 gigs' were not started" in backend.summary
    assert "8GiB,16GiB" in backend.summary
    assert "\n" not in backend.summary
