"""Ctrl-C while the guard starts or finishes a cell (issue 14, 13): the cell is stopped before
it runs, or finishes with its panel frozen; one line, never "Error in callback"."""

from __future__ import annotations

import os
import signal

from ipy_gpuguard.shell.guarded_run import GuardedRun

from ..conftest import guard_magics, guard_threads


def press_ctrl_c_during(monkeypatch, method):
    original = getattr(GuardedRun, method)

    def interrupted(self, *args):
        os.kill(os.getpid(), signal.SIGINT)  # the stop button, as the guard is busy
        return original(self, *args)

    monkeypatch.setattr(GuardedRun, method, interrupted)


def test_ctrl_c_as_the_guard_starts_stops_the_cell_before_it_runs(shell, monkeypatch, capsys):
    press_ctrl_c_during(monkeypatch, "start")
    result = shell.run_cell("%%gpuguard\nran = True")
    out = capsys.readouterr()
    assert "ran" not in shell.user_ns
    # The reply says KeyboardInterrupt, as for a Stop in the cell itself.
    assert type(result.error_before_exec).__name__ == "KeyboardInterrupt"
    assert "Error in callback" not in out.out + out.err
    assert "Traceback" not in out.out + out.err
    assert "KeyboardInterrupt: the cell was interrupted as its guard started" in out.out + out.err
    assert guard_threads() == []
    assert guard_magics(shell).session.status_lines()[-1] == "guarded cell running: no"
    monkeypatch.undo()
    assert shell.run_cell("%%gpuguard\nran = True").success  # the next cell runs, guarded
    assert shell.user_ns["ran"] is True


def test_ctrl_c_as_the_guard_checks_the_options_stops_the_cell_before_it_runs(
    shell, monkeypatch, capsys
):
    """Checking the options opens the session (imports, telemetry: the longest of the guard's
    steps before a cell); a Stop there left IPython's run_cell by a KeyboardInterrupt, which
    ipykernel drops with the request and never answers: the cell hung in the notebook."""
    from ipy_gpuguard.shell.magics import GPUGuardMagics

    original = GPUGuardMagics.guard_options

    def interrupted(self, *args):
        os.kill(os.getpid(), signal.SIGINT)
        return original(self, *args)

    monkeypatch.setattr(GPUGuardMagics, "guard_options", interrupted)
    result = shell.run_cell("%%gpuguard\nstopped_cell_ran = True")
    out = capsys.readouterr()
    assert "stopped_cell_ran" not in shell.user_ns
    assert isinstance(result.error_before_exec, KeyboardInterrupt)
    assert "KeyboardInterrupt: the cell was interrupted as its guard started" in out.out + out.err
    assert guard_threads() == []


def test_ctrl_c_as_the_guard_finishes_still_freezes_the_panel(shell, monkeypatch, capsys):
    press_ctrl_c_during(monkeypatch, "finish")
    result = shell.run_cell("%%gpuguard\nvalue = 7")
    out = capsys.readouterr()
    assert result.success
    assert shell.user_ns["value"] == 7
    assert "ipy_gpuguard · finished" in out.out  # the frozen summary
    assert "Error in callback" not in out.out + out.err
    assert out.err.count("interrupted while the guard finished") == 1
    assert guard_threads() == []


def test_a_stop_in_a_hold_inside_a_hold_is_heard_by_both():
    """The guard's search holds the person's Stop while it keeps or puts back a model, inside
    the hold of its whole finish, whose flag ends the search: a Stop in the inner one must
    reach it too, or the search runs on as if none came."""
    import os
    import signal

    from ipy_gpuguard.shell.interrupts import held_interrupt, noted_interrupts

    with held_interrupt() as outer:
        with held_interrupt() as inner:
            os.kill(os.getpid(), signal.SIGINT)
        with noted_interrupts() as let_through, held_interrupt() as held_in_a_run:
            pass
    assert (outer.received, inner.received) == (True, True)
    assert (let_through.received, held_in_a_run.received) == (False, False)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
