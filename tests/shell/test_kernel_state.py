"""The kernel's state file: atomic, at most once a second while a cell runs, one warning line
when it cannot be written."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import sys

from ipy_gpuguard.protocol import RunningCell, state_path
from ipy_gpuguard.shell.kernel_state import KernelStateFile, kernel_id_of
from ipy_gpuguard.telemetry import DeviceInfo, DeviceReading, DeviceSample, Sample
from ipy_gpuguard.watchdog import ProgressSnapshot

from ..protocol.validate import assert_valid

DEVICE = DeviceInfo(0, "Simulated GPU", 8 * 2**30, simulated=True)
SAMPLE = Sample(1.0, (DeviceSample(0, DeviceReading(used_bytes=2**30, total_bytes=8 * 2**30)),))


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_the_kernel_id_comes_from_a_connection_file_named_as_jupyter_names_it():
    assert kernel_id_of("/run/kernel-5f0c-11ee.json") == "5f0c-11ee"
    assert kernel_id_of("/tmp/tmpab12.json") is None
    assert state_path("/run", "k1").as_posix() == "/run/ipy_gpuguard/kernel-k1.json"


def test_samples_are_written_at_most_once_a_second_and_the_end_always(tmp_path):
    clock = Clock()
    path = tmp_path / "ipy_gpuguard" / "kernel-k1.json"
    state = KernelStateFile(path, "k1", clock=clock, monotonic=clock)
    state.cell_started(RunningCell("cell-1", 4, "model.fit(x)"))
    written = [json.loads(path.read_text())["updated_at"]]
    for _ in range(30):  # 3 s of samples every 0.1 s
        clock.now += 0.1
        state.sampled(SAMPLE, (DEVICE,), ProgressSnapshot(steps=7, last_progress_at=clock.now))
        at = json.loads(path.read_text())["updated_at"]
        if at != written[-1]:
            written.append(at)
    assert [round(b - a, 6) for a, b in itertools.pairwise(written)] == [1.0, 1.0, 1.0]
    clock.now += 0.01
    state.cell_ended(
        "fixed", "oom.tf.tensor", ProgressSnapshot(steps=9, last_progress_at=clock.now)
    )
    ended = json.loads(path.read_text())
    assert_valid("KernelState", ended)
    assert (ended["running"], ended["outcome"], ended["step"]) == (False, "fixed", 9)
    assert ended["last_rule_id"] == "oom.tf.tensor"
    assert ended["devices"][0]["used_bytes"] == 2**30
    assert ended["platform"] == sys.platform
    assert 0 < ended["host_available_bytes"] <= ended["host_total_bytes"]
    assert ended["cell"] == {
        "cell_id": "cell-1",
        "execution_count": 4,
        "first_line": "model.fit(x)",
    }
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left
    state.remove()
    assert not path.exists()


def test_a_state_file_that_cannot_be_written_is_one_warning_line(tmp_path, capsys):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    state = KernelStateFile(blocker / "ipy_gpuguard" / "kernel-k1.json", "k1")
    state.cell_started(RunningCell(None, None, "x"))
    state.cell_ended("ok", None, ProgressSnapshot(steps=0, last_progress_at=0.0))
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("ipy_gpuguard: cannot write the kernel's state file")


def test_its_warning_never_lands_in_a_stream_the_persons_cell_redirected(tmp_path, capsys):
    """A write fails on the sampler's thread while the person's cell runs, perhaps inside their
    ``contextlib.redirect_stderr``: the warning goes to the stream of the cell's start."""
    clock = Clock()
    path = tmp_path / "runtime" / "kernel-k1.json"
    state = KernelStateFile(path, "k1", clock=clock, monotonic=clock)
    state.cell_started(RunningCell(None, None, "x"))
    (tmp_path / "runtime").rename(tmp_path / "gone")
    (tmp_path / "runtime").write_text("")  # a file where the directory was: writes fail
    persons = io.StringIO()
    with contextlib.redirect_stderr(persons):  # the person's, inside their cell
        clock.now += 2
        state.sampled(SAMPLE, (DEVICE,), ProgressSnapshot(steps=7, last_progress_at=clock.now))
    assert persons.getvalue() == ""
    assert capsys.readouterr().err.startswith("ipy_gpuguard: cannot write the kernel's state file")


def test_a_load_whose_output_was_captured_leaves_no_stream_of_its_own_behind(tmp_path, capsys):
    """``%%capture`` around ``%load_ext`` hands the guard a stream that is gone (or the
    person's) by the time a write fails: the warning goes to the stream of the cell's start."""
    path = tmp_path / "runtime" / "kernel-k1.json"
    captured = io.StringIO()
    with contextlib.redirect_stderr(captured):
        state = KernelStateFile(path, "k1")
        state.loaded()
    captured.close()
    (tmp_path / "runtime").rename(tmp_path / "gone")
    (tmp_path / "runtime").write_text("")  # a file where the directory was: writes fail
    state.cell_started(RunningCell(None, None, "x"))
    assert capsys.readouterr().err.startswith("ipy_gpuguard: cannot write the kernel's state file")


def test_a_write_that_fails_leaves_no_temporary_file(tmp_path, monkeypatch, capsys):
    """Issue 22 item 17: a full runtime disk left one empty temporary file per failed write."""
    import errno
    import os

    from ipy_gpuguard.shell import kernel_state

    def full(source, target):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(kernel_state.os, "replace", full)
    path = tmp_path / "ipy_gpuguard" / "kernel-k1.json"
    state = KernelStateFile(path, "k1")
    for count in range(3):
        state.cell_started(RunningCell(f"cell-{count}", count, "model.fit(x)"))
    assert os.listdir(path.parent) == []
    assert "No space left on device" in capsys.readouterr().err


def test_a_record_another_process_wrote_is_not_removed(tmp_path):
    """Issue 22 item 17: two kernels with one id deleted each other's record."""
    path = tmp_path / "ipy_gpuguard" / "kernel-k1.json"
    mine = KernelStateFile(path, "k1")
    mine.loaded()
    theirs = json.loads(path.read_text())
    theirs["pid"] = mine.state.pid + 1
    path.write_text(json.dumps(theirs))
    mine.remove()
    assert json.loads(path.read_text())["pid"] == mine.state.pid + 1
    path.write_text(json.dumps({**theirs, "pid": mine.state.pid}))
    mine.remove()
    assert not path.exists()


def test_a_kernel_that_ends_cleanly_leaves_no_record(tmp_path):
    """Issue 22 item 17: state files survived a clean kernel shutdown, with the cell's first
    line; only a kernel that dies leaves one, for its post-mortem."""
    import subprocess

    path = tmp_path / "ipy_gpuguard" / "kernel-k1.json"
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from ipy_gpuguard.shell.kernel_state import KernelStateFile\n"
        "state = KernelStateFile(Path(sys.argv[1]), 'k1')\n"
        "state.loaded()\n"
        "print(state.path.exists())\n"
    )
    ended = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=60
    )
    assert ended.stdout.strip() == "True"  # it was there while the process ran
    assert not path.exists()
    died = subprocess.run(
        [sys.executable, "-c", script + "import os; os._exit(1)\n", str(path)], timeout=60
    )
    assert died.returncode == 1
    assert path.exists()  # a death leaves it
