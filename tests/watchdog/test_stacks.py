"""Stacks read from another thread, cut to the person's frames."""

from __future__ import annotations

import queue
import sys
import threading

from ipy_gpuguard.watchdog import capture_stacks
from ipy_gpuguard.watchdog.stacks import is_users, library_of, main_thread_position


def wait_for_a_batch(source: queue.Queue) -> None:
    source.get()


def captured_elsewhere():
    """As the watchdog reads them: from a thread of its own, which leaves itself out."""
    found = []
    reader = threading.Thread(target=lambda: found.append(capture_stacks()))
    reader.start()
    reader.join()
    return found[0]


def test_a_blocked_thread_shows_its_own_frame_and_the_library_call_it_waits_in():
    source: queue.Queue = queue.Queue()
    worker = threading.Thread(target=wait_for_a_batch, args=(source,), name="loader")
    worker.start()
    try:
        for _ in range(100):
            report = captured_elsewhere()
            loader = [thread for thread in report.threads if thread.name == "loader"]
            if loader and loader[0].waits_in is not None:
                break
            threading.Event().wait(0.01)
        (thread,) = loader
        assert not thread.is_main
        assert thread.user_frames[-1].function == "wait_for_a_batch"
        assert thread.user_frames[-1].code == "source.get()"
        assert thread.user_frames[-1].place == "test_stacks.py"
        assert thread.calls_into == "python"  # queue and threading are the standard library
        assert thread.waits_in is not None
        assert thread.waits_in.function == "wait"
        assert not thread.run_by_library  # the person started it, through threading
        assert report.threads[0].is_main
        assert report.worker is None
    finally:
        source.put(None)
        worker.join()


def test_the_guards_own_threads_are_left_out():
    stop = threading.Event()
    own = threading.Thread(target=stop.wait, name="ipy_gpuguard-sampler")
    own.start()
    try:
        assert all(
            not thread.name.startswith("ipy_gpuguard") for thread in capture_stacks().threads
        )
    finally:
        stop.set()
        own.join()


def test_whose_files_are_whose():
    import json

    import IPython

    assert is_users("/home/me/project/train.py", home="/home/me/project")
    assert is_users("<ipython-input-3-abc>")
    assert is_users("/tmp/ipykernel_7/2.py", name_cell=lambda f: "Cell In[2]", home="/home/me")
    assert not is_users("<frozen importlib._bootstrap>")
    assert not is_users(json.__file__)
    assert library_of(IPython.__file__) == "IPython"
    assert library_of(json.__file__) == "python"


def test_packages_installed_elsewhere_are_not_the_persons_code():
    """Issue 14, 24: ipykernel's threads showed as "running your code" where packages live
    outside site-packages (``--target`` installs, ``dist-packages``, conda)."""
    home = "/home/me/project"
    assert not is_users("/opt/target-install/ipykernel/iostream.py", home=home)
    assert not is_users("/usr/lib/python3/dist-packages/zmq/sugar/socket.py", home=home)
    assert not is_users("/home/me/project-other/lib.py", home=home)
    assert is_users("/home/me/project/utils/data.py", home=home)


def test_a_launcher_in_the_persons_folder_is_not_their_code(tmp_path, monkeypatch):
    """Issue 21: in a terminal, the ``ipython`` script of a virtual environment inside the
    project folder showed as the person's code, above the cell's own frames."""
    import sys

    from ipy_gpuguard.watchdog.stacks import shorten

    launcher = tmp_path / ".venv" / "bin" / "ipython"
    launcher.parent.mkdir(parents=True)
    launcher.write_text("def start_ipython(run):\n    return run()\n")
    cell_file = tmp_path / "ipykernel_1" / "5.py"
    cell_file.parent.mkdir()
    cell_file.write_text("def train():\n    return capture()\n")
    cells = {str(cell_file): "Cell In[5]"}
    namespace: dict = {
        "capture": lambda: shorten(sys._getframe(1), "MainThread", 1, True, cells.get)
    }
    for source in (launcher, cell_file):
        exec(compile(source.read_text(), str(source), "exec"), namespace)
    monkeypatch.chdir(tmp_path)

    stack = namespace["start_ipython"](namespace["train"])
    assert [line.place for line in stack.user_frames] == ["Cell In[5]"]


def test_the_main_threads_waits_count_each_block():
    """What tells one long call from many short waits at the same line (issue 21)."""
    import sys
    import time

    from ipy_gpuguard.watchdog.stacks import main_thread_waits

    before = main_thread_waits()
    if sys.platform != "linux":
        assert before is None  # not measured: the card then says only what was seen
        return
    for _ in range(5):
        time.sleep(0.01)
    assert main_thread_waits() - before >= 5


def _waiting(gate: threading.Lock, held: list) -> None:
    held.append(sys._getframe())  # this call's frame outlives it: the next call's is another
    gate.acquire()  # the line the main thread waits at


_WAIT_LINE = _waiting.__code__.co_firstlineno + 2


def test_a_loop_that_waits_again_at_the_same_place_has_not_moved():
    """The hang_watchdog notebook's custom loop polls for data that never comes: each wait is a
    new call, whose frame reused the last one's memory or not as other threads' allocations
    fell (a live panel drawn from a thread changed them), and the stall was seen or not."""
    gates = [threading.Lock() for _ in range(30)]  # a new frame's memory is reused or not
    for gate in gates:
        gate.acquire()
    held: list = []
    seen = []

    def look() -> None:
        for index, gate in enumerate(gates):
            last = None
            while True:  # blocked at the closed gate: two looks in a row see the same
                position = main_thread_position()
                waits = len(held) > index and position is not None and position[1] == _WAIT_LINE
                if waits and position == last:
                    break
                last = position
            seen.append(position)
            gate.release()

    looker = threading.Thread(target=look)
    looker.start()
    for gate in gates:
        _waiting(gate, held)  # the same call, from the same line, again and again
    looker.join()
    assert len({id(frame) for frame in held}) == len(gates)  # every call a frame of its own
    assert len(set(seen)) == 1
