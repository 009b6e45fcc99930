"""Remembered batch sizes: per cell (its batch literal blanked) and per device size."""

from __future__ import annotations

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
    assert [p.name for p in tmp_path.iterdir()] == ["sizes.json"]  # no temporary left
