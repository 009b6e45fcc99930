"""Errors of work a framework dispatched asynchronously, surfaced in the guarded cell that
dispatched it.

JAX runs computations asynchronously: a Keras ``fit`` on JAX that runs out of memory in the
middle of a step can return normally, the error held by the arrays it returned (the model's
weights, the history's losses), and raise only when a later line reads one, often in a later
cell, outside the guard. So when a guarded cell ends without an error and JAX is imported, the
guard waits for JAX's live arrays (``jax.block_until_ready(jax.live_arrays())``, quick for
arrays already computed): such an error then fails the cell that caused it, with its card.
"""

from __future__ import annotations

import sys

#: Said above the error, which has no line of the cell to point at.
SURFACED = (
    "ipy_gpuguard: JAX ran this cell's work asynchronously, and it failed after the cell's last "
    "line had returned; the guard waited for it at the end of the cell:"
)


def pending_error() -> Exception | None:
    """The error of JAX's outstanding work, if any failed; ``None`` without JAX."""
    jax = sys.modules.get("jax")
    if jax is None or not hasattr(jax, "live_arrays"):
        return None
    try:
        jax.block_until_ready(jax.live_arrays())
    except Exception as error:  # the framework's own error: it becomes the cell's
        return error
    return None
