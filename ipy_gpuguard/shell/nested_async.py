"""A retry's cell with top-level ``await``, run while the kernel's event loop is running.

IPython runs such a cell with ``shell.loop_runner``, which finds the running loop, the kernel's,
and asks it to ``run_until_complete``: from inside a cell (the guard's retries run after the
cell, in ``post_run_cell``, or in the cell of ``%gpuguard retry``) that fails with "This event
loop is already running". For the attempt, the running loop is set aside: the person's runner
then runs the cell on IPython's own loop, as IPython in a terminal does. The kernel's loop is
blocked meanwhile in any case, since the guard runs on its thread; it is put back after.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from typing import Any


@contextlib.contextmanager
def async_cells_runnable(shell: Any) -> Iterator[None]:
    """While the block runs a cell through ``shell``, a cell with top-level ``await`` runs
    beside the running loop; with no loop running, nothing changes."""
    if asyncio._get_running_loop() is None:
        yield
        return
    theirs = shell.loop_runner
    shell.loop_runner = _beside_the_running_loop(theirs)
    try:
        yield
    finally:
        shell.loop_runner = theirs


def _beside_the_running_loop(runner: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``runner`` with the running loop set aside (``asyncio._set_running_loop``, the hook
    asyncio gives event loops for this) while it runs a cell's coroutine."""

    def run(coroutine: Any) -> Any:
        running = asyncio._get_running_loop()
        asyncio._set_running_loop(None)
        try:
            return runner(coroutine)
        finally:
            asyncio._set_running_loop(running)

    return run
