"""Errors of work a framework dispatched asynchronously, surfaced in the guarded cell that
dispatched it.

JAX runs computations asynchronously: a Keras ``fit`` on JAX that runs out of memory in the
middle of a step can return normally, the error held by the arrays it returned (the model's
weights, the history's losses), and raise only when a later line reads one, often in a later
cell, outside the guard. So when a guarded cell ends without an error and JAX is imported, the
guard waits for the arrays the cell made (``jax.block_until_ready``, quick for arrays already
computed): such an error then fails the cell that caused it, with its card. Arrays that were
alive before the cell are left out: a failed cell's arrays hold their error for good, and would
fail every cell after it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

#: Said above the error, which has no line of the cell to point at.
SURFACED = (
    "ipy_gpuguard: JAX ran this cell's work asynchronously, and it failed after the cell's last "
    "line had returned; the guard waited for it at the end of the cell:"
)


@dataclass(frozen=True)
class PendingWork:
    """JAX's live arrays as a guarded cell starts, by identity only (nothing is kept alive)."""

    before: frozenset[int]

    @classmethod
    def now(cls) -> PendingWork:
        return cls(frozenset(id(array) for array in _live_arrays()))

    def error(self) -> Exception | None:
        """The error of the arrays made since :meth:`now`, if JAX's work on one failed."""
        jax = sys.modules.get("jax")
        made = [array for array in _live_arrays() if id(array) not in self.before]
        if jax is None or not made:
            return None
        try:
            jax.block_until_ready(made)
        except Exception as error:  # the framework's own error: it becomes the cell's
            return error
        return None


def _live_arrays() -> list[Any]:
    """JAX's live arrays; none where JAX is not imported (the guard never imports it)."""
    jax = sys.modules.get("jax")
    live = getattr(jax, "live_arrays", None)
    return list(live()) if callable(live) else []
