from __future__ import annotations

import os
import subprocess
import sys

from ipy_gpuguard.shell.native_log import NativeLogTee


def test_native_lines_are_kept_and_still_reach_the_original_descriptor(capfd):
    tee = NativeLogTee()
    tee.start()
    os.write(2, b"W bfc_allocator.cc:479] Allocator (GPU_0_bfc) ran out of memory\npartial")
    lines = tee.stop()
    assert lines == ("W bfc_allocator.cc:479] Allocator (GPU_0_bfc) ran out of memory", "partial")
    assert "ran out of memory\npartial" in capfd.readouterr().err


def test_a_child_process_still_holding_the_pipe_does_not_block_stop():
    tee = NativeLogTee()
    tee.start()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3)"])
    try:
        lines = tee.stop()  # returns although the child keeps descriptor 2 open
        assert lines == ()
    finally:
        child.kill()
        child.wait()
