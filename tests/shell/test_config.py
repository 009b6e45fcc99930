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


@pytest.mark.parametrize("value", ["inf", "1e309", "nan", "-1"])
def test_an_interval_that_no_thread_can_wait_is_one_usage_line(shell, value):
    """Issue 14, 14: ``--interval inf`` killed the sampler with an ``OverflowError``."""
    result = shell.run_cell(f"%%gpuguard --interval {value}\nran = True")
    assert type(result.error_before_exec).__name__ == "UsageError"
    assert "the interval is a number of seconds" in str(result.error_before_exec)
    assert "ran" not in shell.user_ns


@pytest.mark.parametrize("value", ["inf", "1e309"])
def test_a_timeout_that_no_thread_can_wait_is_refused(shell, value):
    result = shell.run_cell(f"%%gpuguard --timeout {value}\nran = True")
    assert "the timeout is the number of seconds" in str(result.error_before_exec)


def test_a_bad_config_value_is_one_line_and_reloading_keeps_the_default(shell, capsys):
    shell.run_cell("%config GPUGuard.interval = float('inf')")
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    assert guard_magics(shell).session.config.interval == 0.5  # refused
    assert shell.config.GPUGuard.interval == float("inf")  # but left in the shell's config
    result = shell.run_cell("%reload_ext ipy_gpuguard")
    err = capsys.readouterr().err
    assert result.error_in_exec is None
    assert err.count("\n") == 1
    assert "GPUGuard.interval stays at its default" in err
    assert guard_magics(shell).session.config.interval == 0.5


def test_a_bad_value_in_ipython_config_does_not_stop_loading(shell, capsys):
    shell.run_line_magic("unload_ext", "ipy_gpuguard")
    shell.config.GPUGuard.interval = 0.01  # as c.GPUGuard.interval = 0.01 in ipython_config.py
    shell.run_line_magic("load_ext", "ipy_gpuguard")
    assert "GPUGuard.interval stays at its default" in capsys.readouterr().err
    assert guard_magics(shell).session.config.interval == 0.5


def test_auto_retry_minus_one_is_refused_not_read_as_the_default(shell):
    result = shell.run_cell("%%gpuguard --auto-retry -1\nmodel.fit(x, batch_size=64)")
    assert "--auto-retry takes a number of attempts from 1 to 100, not -1" in str(
        result.error_before_exec
    )
