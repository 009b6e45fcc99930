"""The copy of a retry's output that the card keeps (issue 35, item 13): bounded while a long
training redraws its progress bar, and nothing outside ipykernel's streams is touched."""

from __future__ import annotations

import sys

from ipy_gpuguard.shell.stream_record import StreamRecord, recorded_streams


def test_a_progress_bar_redrawn_all_day_is_kept_as_its_last_drawing_in_bounded_memory():
    record = StreamRecord()
    record.add("stdout", "Epoch 1/1\n")
    for step in range(1, 20_001):
        bar = f"{step}/20000 - loss: {1 / step:.4f}"
        record.add("stdout", "\b" * 40 + "\r" + bar)
    record.add("stdout", "\n")
    (output,) = record.outputs()
    assert output["text"] == "Epoch 1/1\n20000/20000 - loss: 0.0001\n"
    assert max(len(text) for _, text in record._chunks) < 2 * 65536


def test_outside_a_kernel_the_streams_are_left_as_they_are():
    stdout, stderr = sys.stdout, sys.stderr
    with recorded_streams() as record:
        assert sys.stdout is stdout
        assert sys.stderr is stderr
        print("printed outside a kernel")
    assert record.outputs() == ()
