from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

from ipy_gpuguard.shell.native_log import NativeLogTee, PipeDrain


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


CHILD = (
    "import sys, time\n"
    "time.sleep(0.5)\n"
    "for n in range(2000):\n"
    "    print('child line', n, file=sys.stderr)\n"
)


def test_a_child_started_in_the_cell_keeps_a_working_stderr_after_it(capfd):
    """TensorBoard or a data server started in a guarded cell (issue 14, 4)."""
    drain = PipeDrain()
    tee = NativeLogTee(drain)
    tee.start()
    child = subprocess.Popen([sys.executable, "-c", CHILD])
    tee.stop()  # the cell ends while the child still runs and holds the pipe
    assert child.wait(timeout=30) == 0  # not killed by SIGPIPE
    for _ in range(100):
        if drain.pipes == 0:
            break
        time.sleep(0.05)
    assert drain.pipes == 0  # the child closed it: the drain let go
    assert "child line 1999" in capfd.readouterr().err
    drain.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("ipy_gpuguard")]


def test_a_line_without_an_end_is_kept_bounded():
    """A progress bar rewritten with ``\r`` for megabytes: what is kept of the line stays
    bounded, so copying stays linear (issue 14, 16; bench/native_log.py measures it)."""
    tee = NativeLogTee()
    for _ in range(64):
        tee._split(b"\r12/100 [==>....]" * 4000)
        assert len(tee._partial) <= 4000
    tee._split(b" done\nnext")
    assert tee._lines[-1].startswith("\r12/100 [==>....]")
    assert len(tee._lines[-1]) <= 4000
    assert tee._partial == b"next"


def test_a_stop_that_lands_as_a_wait_runs_out_hands_nothing_over(monkeypatch):
    """Issue 22 item 19: under load the drain thread was still alive after a plain cell. The
    stop landed between a wait that ran out and the check of the stop flag, and the pipe, at
    its end of file already, was handed over as if a child still held it."""
    from ipy_gpuguard.shell import native_log

    drain = PipeDrain()
    tee = NativeLogTee(drain)
    real_select = native_log.select.select
    waits = []

    def stop_lands_as_the_wait_runs_out(readers, writers, errors, timeout):
        ready = real_select(readers, writers, errors, timeout)
        if timeout and not ready[0] and not waits:  # the first wait that runs out
            waits.append(timeout)
            os.dup2(tee._saved, 2)  # what stop() does, in its order: the writer first
            tee._stop.set()
        return ready

    monkeypatch.setattr(native_log.select, "select", stop_lands_as_the_wait_runs_out)
    tee.start()
    tee._thread.join(timeout=10)
    assert waits
    assert drain.pipes == 0
    assert not any(t.name == "ipy_gpuguard-native-log-drain" for t in threading.enumerate())
    tee.stop()
