"""The kernel state record: what the server extension reads about a kernel, even a dead one.

The kernel writes it atomically to ``<jupyter runtime dir>/ipy_gpuguard/kernel-<id>.json`` at
most once a second while a guarded cell runs and once when it ends, so that a kernel killed in
the middle of a cell (a DirectML timeout, the out-of-memory killer) leaves its last words.
"""

from __future__ import annotations

from dataclasses import dataclass

from .encode import SCHEMA_VERSION


@dataclass(frozen=True)
class RunningCell:
    """The guarded cell running, or the last one: ``first_line`` is its first line of code."""

    cell_id: str | None
    execution_count: int | None
    first_line: str


@dataclass(frozen=True)
class DeviceState:
    """One watched device's last sample."""

    index: int
    name: str
    simulated: bool
    used_bytes: int | None
    total_bytes: int | None
    allocator_bytes: int | None
    utilization_percent: int | None
    temperature_c: int | None


@dataclass(frozen=True)
class KernelState:
    """``running``: a guarded cell runs now; ``outcome`` of the last one (``ok``, ``error``,
    ``fixed`` by a retry) once it has ended. Times are Unix seconds; ``phase`` is Keras'
    ``fit``/``evaluate``/``predict``, ``step`` the steps done, ``last_step_at`` the last one's time."""

    pid: int
    kernel_id: str | None
    updated_at: float
    running: bool
    cell: RunningCell | None
    phase: str | None
    step: int
    last_step_at: float | None
    devices: tuple[DeviceState, ...]
    last_rule_id: str | None
    outcome: str | None
    version: int = SCHEMA_VERSION
