from __future__ import annotations

import pytest
from traitlets import TraitError
from traitlets.config import Config

from ipy_gpuguard.shell.config import GPUGuard

from ..conftest import guard_magics


def test_percent_config_sets_the_defaults_and_the_magic_overrides_them(shell):
    shell.run_cell("%config GPUGuard.interval = 0.25")
    shell.run_cell("%config GPUGuard.devices = [0]")
    magics = guard_magics(shell)
    assert magics.guard_options("").interval_s == 0.25
    assert magics.guard_options("").devices == (0,)
    assert magics.guard_options("--interval 1").interval_s == 1.0
    assert magics.guard_options("--no-panel").show_panel is False


def test_config_file_values_reach_the_configurable():
    config = Config()
    config.GPUGuard.interval = 0.75
    config.GPUGuard.panel = False
    guard = GPUGuard(config=config)
    assert guard.interval == 0.75
    assert guard.panel is False


def test_simulate_defaults_to_the_environment(monkeypatch):
    monkeypatch.setenv("GPUGUARD_SIMULATE", "16GiB")
    assert GPUGuard().simulate == "16GiB"


@pytest.mark.parametrize(
    ("name", "value"), [("interval", 0.0), ("interval", float("nan")), ("devices", [-1])]
)
def test_invalid_values_are_refused_with_the_reason(name, value):
    with pytest.raises(TraitError, match=f"GPUGuard.{name}"):
        setattr(GPUGuard(), name, value)
