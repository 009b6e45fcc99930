"""Replacing a shared file as Windows allows it: refused while another process reads it."""

from __future__ import annotations

import os

import pytest

from ipy_gpuguard.protocol import files
from ipy_gpuguard.retry import BatchMemory, Remembered


def refusing(times: int):
    """``os.replace`` refused ``times`` times, as Windows refuses while a reader has the file
    open (``PermissionError``, WinError 5), then done."""
    real = os.replace
    calls = []

    def replace(source, target):
        calls.append(target)
        if len(calls) <= times:
            raise PermissionError(13, "Access is denied", str(target))
        real(source, target)

    replace.calls = calls
    return replace


def test_a_replace_refused_for_a_moment_is_tried_again(tmp_path, monkeypatch):
    """Issue 24 item 7: the state file's replace failed while the server read it."""
    replace = refusing(2)
    monkeypatch.setattr(files.os, "replace", replace)
    monkeypatch.setattr(files, "REPLACE_PAUSE_S", 0)
    memory = BatchMemory(tmp_path / "sizes.json")
    assert memory.remember("k", Remembered(32, "BATCH", None, 1.0)) is True
    assert len(replace.calls) == 3
    assert memory.recall("k").batch_size == 32
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sizes.json", "sizes.json.lock"]


def test_a_replace_refused_for_good_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    """Issue 24 item 7: a failed replace left its temporary file behind."""
    memory = BatchMemory(tmp_path / "sizes.json")
    assert memory.remember("old", Remembered(16, "BATCH", None, 1.0))
    monkeypatch.setattr(files.os, "replace", refusing(files.REPLACE_ATTEMPTS))
    monkeypatch.setattr(files, "REPLACE_PAUSE_S", 0)
    assert memory.remember("new", Remembered(32, "BATCH", None, 1.0)) is False
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sizes.json", "sizes.json.lock"]
    assert memory.recall("old").batch_size == 16


def test_only_a_refusal_is_tried_again(tmp_path, monkeypatch):
    def full_disk(source, target):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", full_disk)
    temporary = tmp_path / ".state.tmp"
    temporary.write_text("{}")
    with pytest.raises(OSError, match="No space left"):
        files.replace_atomically(str(temporary), tmp_path / "state.json")
    assert list(tmp_path.iterdir()) == []


def test_a_kernels_state_file_refused_for_a_moment_is_written(tmp_path, monkeypatch, capsys):
    from ipy_gpuguard.protocol import RunningCell
    from ipy_gpuguard.shell.kernel_state import KernelStateFile

    monkeypatch.setattr(files.os, "replace", refusing(2))
    monkeypatch.setattr(files, "REPLACE_PAUSE_S", 0)
    path = tmp_path / "kernel-k1.json"
    KernelStateFile(path, "k1").cell_started(RunningCell("cell-1", 1, "model.fit(x)"))
    assert '"cell-1"' in path.read_text()
    assert os.listdir(tmp_path) == ["kernel-k1.json"]
    assert capsys.readouterr().err == ""
