"""Remembered batch sizes: per cell (its batch literal blanked) and per device size."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

from ipy_gpuguard.retry import BatchMemory, Remembered, cell_key

GiB = 2**30


def test_a_remembered_size_is_recalled_for_the_same_cell_and_device(tmp_path):
    memory = BatchMemory(tmp_path / "sizes.json")
    key = cell_key("%%gpuguard --auto-retry\nmodel.fit(x, batch_size=…)", (8 * GiB,))
    memory.remember(key, Remembered(96, "batch_size", 7 * GiB, 1.0))
    assert BatchMemory(tmp_path / "sizes.json").recall(key) == Remembered(
        96, "batch_size", 7 * GiB, 1.0
    )


def test_the_guard_line_does_not_change_the_key_but_the_device_does():
    cell = "model.fit(x, batch_size=…)"
    key = cell_key(cell, (8 * GiB,))
    assert cell_key("%%gpuguard --find-max\n" + cell, (8 * GiB,)) == key
    assert cell_key(cell, (16 * GiB,)) != key
    assert cell_key(cell, ()).endswith("@cpu")


def test_a_missing_or_broken_file_is_an_empty_memory(tmp_path):
    path = tmp_path / "sizes.json"
    assert BatchMemory(path).recall("k") is None
    path.write_text("{not json")
    assert BatchMemory(path).recall("k") is None
    BatchMemory(path).remember("k", Remembered(8, "bs", None, 2.0))
    assert BatchMemory(path).recall("k").batch_size == 8
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sizes.json", "sizes.json.lock"]


def test_a_memory_that_cannot_be_written_is_one_warning_line(tmp_path, capsys):
    """Issue 14, 15: HOME not a directory turned a fixed cell into an error."""
    blocker = tmp_path / "home"
    blocker.write_text("not a directory")
    memory = BatchMemory(blocker / "ipy_gpuguard" / "batch_sizes.json")
    assert memory.remember("cell@8", Remembered(32, "BATCH", None, 1.0)) is False
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("ipy_gpuguard: cannot remember batch size 32 in ")
    assert memory.recall("cell@8") is None


def test_a_deeply_nested_file_is_an_empty_memory(tmp_path):
    path = tmp_path / "batch_sizes.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert BatchMemory(path).recall("cell@8") is None


def test_two_processes_remembering_at_once_lose_nothing(tmp_path):
    """Issue 14, 17: 230 of 400 entries were kept."""
    path = tmp_path / "batch_sizes.json"
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from ipy_gpuguard.retry import BatchMemory, Remembered\n"
        "memory = BatchMemory(Path(sys.argv[1]))\n"
        "for n in range(200):\n"
        "    memory.remember(f'{sys.argv[2]}-{n}@8', Remembered(n + 1, 'B', None, 1.0))\n"
    )
    writers = [subprocess.Popen([sys.executable, "-c", script, str(path), name]) for name in "ab"]
    assert [writer.wait(timeout=120) for writer in writers] == [0, 0]
    assert len(json.loads(path.read_text())) == 400
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_fifo_at_the_memory_is_an_empty_memory_at_once(tmp_path):
    """Issue 22 item 6: a FIFO at the batch-size memory hung the guarded cell."""
    path = tmp_path / "batch_sizes.json"
    os.mkfifo(path)
    memory = BatchMemory(path)
    assert memory.recall("k") is None  # returns at once: nothing is written to the FIFO


def test_the_lock_is_not_created_through_a_dangling_link(tmp_path, capsys):
    """Issue 22 item 2: the memory's lock was created through a dangling link."""
    target = tmp_path / "elsewhere" / "planted"
    target.parent.mkdir()
    path = tmp_path / "batch_sizes.json"
    path.with_name(path.name + ".lock").symlink_to(target)
    memory = BatchMemory(path)
    assert memory.remember("k", Remembered(32, "BATCH", None, 1.0)) is False
    assert not target.exists()
    assert "a link, which the guard does not follow" in capsys.readouterr().err
