from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from ..conftest import guard_magics, guard_threads


def run(ip, cell):
    return ip.run_cell(cell, store_history=True)


def test_a_guarded_cell_runs_as_the_cell_itself(shell, capsys):
    result = run(
        shell, "%%gpuguard --interval 0.05\nimport time\ntime.sleep(0.2)\nanswer = 6 * 7\nanswer"
    )
    assert result.success
    assert result.result == 42
    assert shell.user_ns["answer"] == 42
    out = capsys.readouterr().out
    assert "ipy_gpuguard · finished" in out
    assert "GPU 0 · Simulated GPU (8.00 GiB): peak" in out
    assert guard_threads() == []


def test_a_failing_cell_fails_as_without_the_magic(shell, capsys):
    cell = "%%gpuguard\ndef f():\n    raise ValueError('boom')\nf()\n"
    result = run(shell, cell)
    out = capsys.readouterr().out
    assert not result.success
    assert isinstance(result.error_in_exec, ValueError)
    assert out.count("Traceback (most recent call last)") == 1
    # the cell's own number, and line numbers as the cell shows them (line 1 is %%gpuguard)
    assert f"In[{result.execution_count}], line 4" in out
    assert "ValueError: boom" in out
    assert "ipy_gpuguard" not in out.split("ValueError: boom")[0]  # no guard frame in the traceback
    # %debug reaches the user's frames
    assert sys.last_value is result.error_in_exec
    frames = []
    tb = sys.last_traceback
    while tb:
        frames.append(tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    assert frames[-1] == "f"


def test_keyboard_interrupt_passes_through_untouched(shell, capsys):
    result = run(shell, "%%gpuguard\nraise KeyboardInterrupt")
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    assert "KeyboardInterrupt" in capsys.readouterr().out
    assert guard_threads() == []


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "--intervl 1",
            "%%gpuguard: unrecognized arguments: --intervl 1 (see %%gpuguard? for the options)",
        ),
        ("--interval fast", "argument --interval: invalid float value: 'fast'"),
        ("--interval 0", "the interval is a number of seconds from 0.05"),
        ("--devices a,b", "'a,b' is not a list of device indices like 0 or 0,1"),
        ("--devices 3", "no device 3: the visible devices are 0"),
        ("--timeout 0", "the timeout is the number of seconds without progress"),
        # Issue 22 item 15: "limit 0 ms", a keyword as the variable, a 20-digit number of runs.
        (
            "--timeout 1e-300",
            "the timeout (1e-300 s) is shorter than the sampling interval (0.5 s)",
        ),
        ("--timeout 0.2 --interval 0.5", "is shorter than the sampling interval (0.5 s)"),
        ("--batch-var class", "--batch-var takes a variable name like BATCH_SIZE, not 'class'"),
        (
            "--auto-retry 99999999999999999999",
            "--auto-retry takes a number of attempts from 1 to 100",
        ),
        ("--min-batch 4294967296", "--min-batch is a batch size from 1 to 2147483647"),
        ("--timeout soon", "argument --timeout: invalid float value: 'soon'"),
        ("--on-hang explode", "argument --on-hang: invalid choice: 'explode'"),
    ],
)
def test_a_wrong_option_is_one_line_and_the_cell_does_not_run(shell, capsys, line, message):
    shell.user_ns.pop("ran", None)
    result = run(shell, f"%%gpuguard {line}\nran = True")
    out = capsys.readouterr()
    assert not result.success
    assert "ran" not in shell.user_ns
    text = out.out + out.err
    assert message in text
    assert "Traceback" not in text
    assert len([line for line in text.splitlines() if line.strip()]) == 1


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("frobnicate", "%gpuguard: argument command: invalid choice: 'frobnicate'"),
        ("simulate 8 gigs", "%gpuguard: unrecognized arguments: gigs"),
        ("simulate 8XB", "%gpuguard simulate: '8XB' is not a size like 8GiB"),
        ("simulate", "%gpuguard simulate needs sizes like 8GiB"),
        ("status now", "%gpuguard status takes no value"),
    ],
)
def test_line_magic_mistakes_are_one_line(shell, capsys, line, message):
    result = run(shell, f"%gpuguard {line}")
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert not result.success
    assert message in text
    assert "Traceback" not in text


def test_status_names_the_source_devices_and_settings(shell, capsys):
    run(shell, "%config GPUGuard.interval = 0.25")
    run(shell, "%gpuguard status")
    out = capsys.readouterr().out
    assert "telemetry: simulated" in out
    assert "GPU 0 · Simulated GPU (8.00 GiB) · 8.00 GiB" in out
    assert "interval 0.25 s" in out
    assert "GPU watchdog: not read for simulated devices" in out
    assert "stall watchdog: limit adaptive · first step up to 120 s · on hang report" in out


def test_status_shows_each_gpus_watchdog(shell, capsys):
    from ipy_gpuguard.watchdog import SystemTimeoutProbe

    from ..watchdog.fakes import NVML_DRIVER_WDDM, fake_nvml

    guard_magics(shell).session.timeout_probe = SystemTimeoutProbe(
        platform="win32",
        read_registry=lambda: {"TdrDelay": 5},
        nvml=fake_nvml(NVML_DRIVER_WDDM, display_active=False),
    )
    guard_magics(shell).session.config.timeout = 60
    run(shell, "%gpuguard status")
    out = capsys.readouterr().out
    assert (
        "GPU 0 · watchdog on: Windows resets this WDDM GPU when one piece of work runs past 5 s"
        in out
    )
    assert "stall watchdog: limit 60 s" in out


def test_a_wrong_watchdog_setting_says_what_is_wanted():
    from traitlets import TraitError

    from ipy_gpuguard.shell.config import GPUGuard

    with pytest.raises(
        TraitError, match=r"GPUGuard\.timeout: the timeout is the number of seconds"
    ):
        GPUGuard(timeout=-3)
    with pytest.raises(TraitError, match="'panic'"):
        GPUGuard(on_hang="panic")
    assert GPUGuard(on_hang="Interrupt").on_hang == "interrupt"


def test_simulate_switches_devices(shell, capsys):
    run(shell, "%gpuguard simulate 8GiB,16GiB")
    assert "simulated devices on: 8.00 GiB, 16.0 GiB" in capsys.readouterr().out
    run(shell, "%gpuguard status")
    assert "GPU 1 · Simulated GPU (16.0 GiB)" in capsys.readouterr().out
    run(shell, "%gpuguard simulate off")
    run(shell, "%gpuguard status")
    assert "telemetry: none · no GPU telemetry: NVML library not found" in capsys.readouterr().out


def test_without_telemetry_the_cell_runs_and_the_summary_says_why(shell, capsys):
    run(shell, "%gpuguard simulate off")
    capsys.readouterr()
    result = run(shell, "%%gpuguard\nvalue = 1 + 1")
    assert result.success
    assert shell.user_ns["value"] == 2
    out = capsys.readouterr().out
    assert "no GPU telemetry: NVML library not found" in out


def test_help_documents_the_options(shell):
    cell_help = guard_magics(shell).gpuguard_cell.__doc__
    assert "--interval SECONDS" in cell_help
    assert "--no-panel" in cell_help
    assert "--timeout SECONDS" in cell_help
    assert "--on-hang {report,interrupt}" in cell_help
    assert "ipy_gpuguard.heartbeat()" in cell_help
    assert "Run a cell under the GPU guard" in cell_help
    assert "simulate" in guard_magics(shell).gpuguard_line.__doc__


def test_no_panel_shows_no_summary(shell, capsys):
    result = run(shell, "%%gpuguard --no-panel\nx = 1")
    assert result.success
    assert "ipy_gpuguard" not in capsys.readouterr().out


def test_other_cell_magics_and_top_level_await_keep_working(shell):
    assert run(shell, "%%gpuguard\n%%capture captured\nprint('inside')").success
    assert shell.user_ns["captured"].stdout == "inside\n"
    result = run(shell, "%%gpuguard\nimport asyncio\nawaited = await asyncio.sleep(0, result=3)")
    assert result.success
    assert shell.user_ns["awaited"] == 3


def test_called_as_a_cell_magic_it_still_guards(shell, capsys):
    shell.run_cell_magic("gpuguard", "--interval 0.1", "through_magic = 5")
    assert shell.user_ns["through_magic"] == 5
    assert "ipy_gpuguard · finished" in capsys.readouterr().out


class BrokenBackend:
    kind = "nvml"
    summary = "broken"

    def devices(self):
        raise RuntimeError("driver went away")

    def close(self):
        pass


def test_a_guard_that_fails_to_start_still_runs_the_cell(shell, capsys):
    session = guard_magics(shell).session
    session._reset_backend()
    session._open_telemetry = lambda _spec: BrokenBackend()
    result = run(shell, "%%gpuguard\nsurvived = 'yes'\nraise NameError('mine')")
    captured = capsys.readouterr()
    assert shell.user_ns["survived"] == "yes"
    assert isinstance(result.error_in_exec, NameError)
    assert captured.out.count("Traceback") == 1
    assert "NameError: mine" in captured.out
    assert captured.err.strip() == (
        "ipy_gpuguard: the guard failed to start (RuntimeError: driver went away); the cell runs unguarded"
    )


def test_a_guard_that_fails_to_finish_leaves_the_result_standing(shell, capsys, monkeypatch):
    session = guard_magics(shell).session
    finish = session.end

    def finish_then_fail(key, ended_with=""):
        finish(key, ended_with)
        raise OSError("display went away")

    monkeypatch.setattr(session, "end", finish_then_fail)
    result = run(shell, "%%gpuguard\n40 + 2")
    assert result.success
    assert result.result == 42
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    assert captured.err.strip() == (
        "ipy_gpuguard: the guard failed to finish (OSError: display went away); "
        "the cell's own result stands"
    )
    assert guard_threads() == []
    monkeypatch.undo()  # let the fixture unload the extension through the real session


def test_a_guard_failure_of_several_lines_is_said_in_one(shell, capsys, monkeypatch):
    """A message of several lines (a driver's, a framework's) stays one line of the guard's."""
    session = guard_magics(shell).session
    finish = session.end

    def finish_then_fail(key, ended_with=""):
        finish(key, ended_with)
        raise OSError("display went away\n  at frame 1\n  at frame 2")

    monkeypatch.setattr(session, "end", finish_then_fail)
    assert run(shell, "%%gpuguard\n40 + 2").result == 42
    assert capsys.readouterr().err.splitlines() == [
        "ipy_gpuguard: the guard failed to finish (OSError: display went away); "
        "the cell's own result stands"
    ]
    monkeypatch.undo()


def test_a_bad_gpuguard_simulate_is_one_clear_line_at_load_and_the_cell_runs(
    shell, capsys, monkeypatch
):
    """Issue 14, 14: it was only a note in the panel of every cell."""
    shell.run_line_magic("unload_ext", "ipy_gpuguard")
    monkeypatch.setenv("GPUGUARD_SIMULATE", "8 gigs")
    shell.run_line_magic("load_ext", "ipy_gpuguard")
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("ipy_gpuguard: GPUGuard.simulate (or GPUGUARD_SIMULATE): ")
    assert "'8 gigs'" in line
    assert "give sizes like 8GiB or 8GiB,16GiB" in line
    result = run(shell, "%%gpuguard\nvalue = 3")
    assert result.success
    assert shell.user_ns["value"] == 3
    assert "8 gigs" not in capsys.readouterr().out


def test_transformer_blanks_the_guard_line_and_keeps_a_following_cell_magic_first(shell):
    assert shell.transform_cell("%%gpuguard --interval 1\nx = 1\n") == "\nx = 1\n"
    assert shell.transform_cell("%%gpuguard\n%%time\nx = 1\n") == (
        "get_ipython().run_cell_magic('time', '', 'x = 1\\n')\n"
    )
    assert shell.transform_cell("%%gpuguardian\nx = 1\n").startswith(
        "get_ipython().run_cell_magic('gpuguardian'"
    )


def test_a_terminal_waits_for_a_blank_line_as_for_any_cell_magic(shell):
    check = shell.input_transformer_manager.check_complete
    assert check("%%gpuguard\nx = 1") == check("%%time\nx = 1") == ("incomplete", 0)
    assert check("%%gpuguard\nx = 1\n\n") == ("complete", None)


def test_run_cell_magic_fails_the_calling_cell_with_one_line(shell, capsys):
    """What nbconvert exports: ``get_ipython().run_cell_magic('gpuguard', '', ...)`` (issue 14, 5)."""
    result = shell.run_cell("get_ipython().run_cell_magic('gpuguard', '', '1/0')\nran_on = True")
    out = capsys.readouterr().out
    assert type(result.error_in_exec).__name__ == "GuardedCellFailed"
    assert "ran_on" not in shell.user_ns
    assert out.count("Traceback (most recent call last)") == 1  # the cell's own, once
    assert "GuardedCellFailed: the guarded cell failed with ZeroDivisionError" in out


def test_an_exported_script_stops_at_a_failed_guarded_cell(tmp_path):
    script = tmp_path / "exported.py"
    script.write_text(
        "get_ipython().run_line_magic('load_ext', 'ipy_gpuguard')\n"
        "get_ipython().run_cell_magic('gpuguard', '', '1/0\\n')\n"
        "print('went on')\n"
    )
    env = {**os.environ, "GPUGUARD_SIMULATE": "8GiB"}
    for name in (script.name, "exported.ipy"):
        if name.endswith(".ipy"):
            (tmp_path / name).write_text("%load_ext ipy_gpuguard\n%%gpuguard\n1/0\n")
        run = subprocess.run(
            [sys.executable, "-m", "IPython", name],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert run.returncode != 0, (name, run.stdout[-2000:])
        assert "went on" not in run.stdout


def test_gpuguard_below_another_cell_magic_says_the_cell_runs_unguarded(shell, capsys):
    """Issue 14, 17: ``%%time`` above ``%%gpuguard`` ran unguarded without a word."""
    result = shell.run_cell("%%time\n%%gpuguard\nvalue = 5\n")
    assert result.success
    assert shell.user_ns["value"] == 5
    err = capsys.readouterr().err
    assert "%%gpuguard guards a cell only from its first line" in err
    assert err.count("ipy_gpuguard:") == 1


def test_status_when_the_telemetry_raises_is_one_line(shell, capsys):
    """Issue 14, 17: ``OSError`` from the backend printed a 30-line traceback."""

    def broken(spec):
        raise OSError("libnvidia-ml.so.1: cannot read")

    session = guard_magics(shell).session
    session._reset_backend()
    session._open_telemetry = broken
    shell.run_line_magic("gpuguard", "status")
    out = capsys.readouterr().out
    assert out == (
        "ipy_gpuguard: the telemetry could not be read (OSError: libnvidia-ml.so.1: cannot read)\n"
    )


def test_the_doctor_on_an_ascii_terminal_prints_its_report(tmp_path):
    """Issue 14, 17: ``UnicodeEncodeError`` when stdout is ASCII or Latin-1."""
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "GPUGUARD_SIMULATE": ""}
    run = subprocess.run(
        [sys.executable, "-m", "ipy_gpuguard", "doctor"],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    assert run.returncode in (0, 1), run.stderr[-2000:]
    assert "Traceback" not in run.stderr
    assert "Python and platform" in run.stdout


def test_a_cell_that_finishes_after_a_slow_stretch_is_not_called_stalled(shell, capsys):
    """Issue 21: a cell that finished normally got "No progress for 9.5 s ... still stalled when
    it ended"."""
    result = run(shell, "%%gpuguard --timeout 0.3 --interval 0.05\nimport time\ntime.sleep(1)")
    assert result.success
    out = capsys.readouterr().out
    assert "still stalled" not in out
    assert re.search(r"stalled for [\d.]+ m?s at [\d.]+ m?s, then went on", out)


def test_a_cells_options_are_parsed_once(shell, monkeypatch):
    """Issue 21: options were parsed twice per cell (the transformer, then the cell's start)."""
    magics = guard_magics(shell)
    parsed = []
    parse = magics.guard_options
    monkeypatch.setattr(magics, "guard_options", lambda *args: parsed.append(args) or parse(*args))
    assert run(shell, "%%gpuguard --interval 0.1 --no-panel\nx = 1").success
    assert len(parsed) == 1
    assert magics.session.last_run is not None


def test_a_loop_of_short_waits_at_one_line_is_counted_as_such(shell):
    """Issue 21: a loop of 0.5 s sleeps was called "inside one call"."""
    import sys

    cell = (
        "%%gpuguard --timeout 0.5 --interval 0.05\nimport time\nfor _ in range(6): time.sleep(0.25)"
    )
    assert run(shell, cell).success
    (stall,) = guard_magics(shell).session.last_run.watchdog.past_stalls
    if sys.platform == "linux":
        assert stall.main_waits >= 2
    else:
        assert stall.main_waits is None


def test_a_stall_the_person_interrupts_is_said_to_be_interrupted(shell, capsys):
    """Issue 21: a stall ended by the stop button read "then went on": the interrupt unwinding
    into IPython's traceback moved the main thread, which counted as progress."""
    cell = (
        "%%gpuguard --timeout 0.5 --interval 0.05\n"
        "import os, signal, threading, time, ipy_gpuguard\n"
        "ipy_gpuguard.heartbeat()\n"
        "threading.Timer(1.2, os.kill, (os.getpid(), signal.SIGINT)).start()  # the stop button\n"
        "time.sleep(30)\n"
    )
    result = run(shell, cell)
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    out = capsys.readouterr().out
    assert "interrupted (the stop button, or Interrupt)" in out
    assert "then went on" not in out
