"""Where the cell's threads are: stacks read from another thread, cut to the person's frames.

A stack of a stuck training cell is mostly the framework's (sixty frames of Keras and
TensorFlow); what helps is the person's own frames, the framework call they are in, and the
line the thread waits on. The main thread is always shown; another thread only when it runs
the person's code, such as the generator that ``tf.data`` runs on a thread of its own.
"""

from __future__ import annotations

import linecache
import os
import site
import sys
import sysconfig
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from types import FrameType

#: Names a cell's file for people: ``Cell In[5]``; ``None`` for a file that is not a cell.
CellNamer = Callable[[str], str | None]

_OWN_THREADS = "ipy_gpuguard"
#: A thread the threading module does not know (one a library started in C++) until named.
_UNNAMED = "thread "
#: Source lines are cut to this many characters: one line of a card.
_CODE_WIDTH = 80


@dataclass(frozen=True)
class FrameLine:
    """One frame, as a person reads it: ``Cell In[5], line 3, in batches: time.sleep(0.05)``."""

    place: str
    line: int
    function: str
    code: str

    def __str__(self) -> str:
        code = f": {self.code}" if self.code else ""
        return f"{self.place}, line {self.line}, in {self.function}{code}"


@dataclass(frozen=True)
class ThreadStack:
    """One thread's stack, shortened.

    Parameters
    ----------
    user_frames
        The person's own frames, outermost first (cells, and files outside the installed
        packages and the standard library).
    calls_into
        The library the innermost person's frame called (``keras``).
    waits_in
        The innermost frame when it is a library's (``threading.py, line 331, in wait``).
    run_by_library
        The thread runs the person's code on behalf of a library (``tf.data`` runs a Python
        generator on a thread of its own): the likely place of a stuck input pipeline.
    """

    name: str
    ident: int
    is_main: bool
    user_frames: tuple[FrameLine, ...]
    calls_into: str | None = None
    waits_in: FrameLine | None = None
    run_by_library: bool = False


@dataclass(frozen=True)
class StackReport:
    """The main thread, then the other threads that run the person's code."""

    threads: tuple[ThreadStack, ...]

    @property
    def worker(self) -> ThreadStack | None:
        """A thread a library runs the person's code on: the first to interrupt."""
        return next((thread for thread in self.threads if thread.run_by_library), None)


def capture_stacks(name_cell: CellNamer = lambda filename: None) -> StackReport:
    """Read the stacks of the main thread and of every thread running the person's code."""
    frames = sys._current_frames()
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    main = threading.main_thread().ident
    stacks = []
    for ident, frame in frames.items():
        name = names.get(ident, f"{_UNNAMED}{ident}")
        if ident == threading.get_ident() or name.startswith(_OWN_THREADS):
            continue
        stack = shorten(frame, name, ident, ident == main, name_cell)
        if stack.is_main or stack.user_frames:
            stacks.append(stack)
    stacks.sort(key=lambda stack: not stack.is_main)
    return StackReport(tuple(stacks))


def shorten(
    frame: FrameType, name: str, ident: int, is_main: bool, name_cell: CellNamer
) -> ThreadStack:
    """One thread's stack, cut to the person's frames, the call they are in, and the wait."""
    chain: list[FrameType] = []
    current: FrameType | None = frame
    while current is not None:
        chain.append(current)
        current = current.f_back
    chain.reverse()  # outermost first
    chain = [f for f in chain if library_of(f.f_code.co_filename) != _OWN_THREADS]
    home = os.getcwd()
    owned = [is_users(f.f_code.co_filename, name_cell, home) for f in chain]
    cells = [index for index, f in enumerate(chain) if _is_cell(f.f_code.co_filename, name_cell)]
    if cells:  # what runs the cell (a launcher script in the person's folder) is not theirs
        owned = [mine and index >= cells[0] for index, mine in enumerate(owned)]
    user_frames = tuple(_line(f, name_cell) for f, mine in zip(chain, owned, strict=True) if mine)
    calls_into = waits_in = None
    if user_frames and not owned[-1]:
        last_mine = max(index for index, mine in enumerate(owned) if mine)
        called = chain[last_mine + 1]
        calls_into = library_of(called.f_code.co_filename)
        waits_in = _line(chain[-1], name_cell)
    elif not user_frames and chain:
        waits_in = _line(chain[-1], name_cell)
    first_mine = owned.index(True) if True in owned else len(chain)
    libraries = [library_of(f.f_code.co_filename) for f in chain[:first_mine]]
    runner = next((library for library in libraries if library != "python"), None)
    if not is_main and runner is not None and name.startswith(_UNNAMED):
        name = f"a {runner} thread"
    run_by_library = not is_main and bool(user_frames) and runner is not None
    return ThreadStack(name, ident, is_main, user_frames, calls_into, waits_in, run_by_library)


def main_thread_position(name_cell: CellNamer | None = None) -> tuple[int, int, int, int] | None:
    """Where the main thread is: its innermost frame's code, line and instruction, and the
    stack's depth; ``None`` when the cell's code is not on its stack (with ``name_cell``, which
    knows the cell's files): the cell has ended, or not begun.

    Two equal positions a while apart mean the main thread has not moved on: it is inside one
    native call, or it calls the same function from the same place again and again (a loop
    polling for data that never comes). The frame object itself is not part of it: a new call's
    frame may or may not reuse a finished one's memory, as the other threads' allocations
    happen to fall, and a polling loop was a stall or not by chance. A cell that left its code
    (an exception unwinding into IPython's traceback) has not moved on.
    """
    frame = sys._current_frames().get(threading.main_thread().ident or -1)
    if frame is None:
        return None
    depth, in_cell = 0, name_cell is None
    current_frame: FrameType | None = frame
    while current_frame is not None:
        depth += 1
        if not in_cell and name_cell is not None:
            in_cell = _is_cell(current_frame.f_code.co_filename, name_cell)
        current_frame = current_frame.f_back
    return (id(frame.f_code), frame.f_lineno, frame.f_lasti, depth) if in_cell else None


def main_thread_waits() -> int | None:
    """How many times the main thread has blocked so far: its voluntary context switches
    (Linux's ``/proc``); ``None`` where they cannot be read.

    One long call (a sleep, a lock, a GPU wait) blocks once; a loop of short waits blocks at
    each: what tells "inside one call" from "waiting again and again" at the same line.
    """
    native_id = getattr(threading.main_thread(), "native_id", None)
    try:
        with open(f"/proc/self/task/{native_id}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("voluntary_ctxt_switches:"):
                    return int(line.split(":")[1])
    except (OSError, ValueError):
        return None
    return None


def is_users(filename: str, name_cell: CellNamer | None = None, home: str | None = None) -> bool:
    """Whether a file is the person's: a cell, or a file under the notebook's folder (``home``,
    the kernel's working directory) that is not an installed package.

    Not "any file outside site-packages": packages also live in ``dist-packages``, ``--target``
    folders and conda environments, and ipykernel's own threads must not read as the person's.
    """
    if filename.startswith("<"):
        return filename.startswith("<ipython-input-")
    if name_cell is not None and name_cell(filename) is not None:
        return True
    if library_package(filename) is not None:
        return False
    return os.path.realpath(filename).startswith(_root(home if home is not None else os.getcwd()))


def _is_cell(filename: str, name_cell: CellNamer) -> bool:
    return filename.startswith("<ipython-input-") or name_cell(filename) is not None


def library_of(filename: str) -> str:
    """The top-level package a library file belongs to (``keras``); ``python`` for the stdlib;
    the file's own name for a file of no library."""
    return library_package(filename) or os.path.basename(filename)


@cache
def library_package(filename: str) -> str | None:
    """The top-level package a library file belongs to (``keras``); ``python`` for the stdlib,
    ``ipy_gpuguard`` for this package; ``None`` for a file of no library."""
    path = os.path.realpath(filename)
    for root, label in _library_roots().items():
        if path.startswith(root):
            return label or path[len(root) :].split(os.sep)[0].removesuffix(".py")
    return None


@cache
def _library_roots() -> dict[str, str | None]:
    """Installed packages (labelled by their first folder), this package, the standard library.

    Packages come first: in an installation without a virtual environment, ``site-packages``
    lies inside the standard library's folder.
    """
    paths = sysconfig.get_paths()
    package_dirs = (paths["purelib"], paths["platlib"], site.getusersitepackages())
    roots: dict[str, str | None] = {_root(path): None for path in package_dirs}
    roots[_root(os.path.dirname(os.path.dirname(__file__)))] = "ipy_gpuguard"
    for key in ("stdlib", "platstdlib"):
        roots.setdefault(_root(paths[key]), "python")
    return roots


def _root(path: str) -> str:
    return os.path.join(os.path.realpath(path), "")


def _line(frame: FrameType, name_cell: CellNamer) -> FrameLine:
    filename = frame.f_code.co_filename
    line = frame.f_lineno or 0
    place = name_cell(filename) or os.path.basename(filename)
    code = linecache.getline(filename, line).strip()
    if len(code) > _CODE_WIDTH:
        code = code[: _CODE_WIDTH - 3] + "..."
    return FrameLine(place, line, frame.f_code.co_name, code)
