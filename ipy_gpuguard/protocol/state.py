"""The kernel state record: what the server extension reads about a kernel, even a dead one.

The kernel writes it atomically to ``<jupyter runtime dir>/ipy_gpuguard/kernel-<id>.json`` at
most once a second while a guarded cell runs and once when it ends, so that a kernel killed in
the middle of a cell (a DirectML timeout, the out-of-memory killer) leaves its last words.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .encode import SCHEMA_VERSION, schema
from .files import os_reason, read_regular


@dataclass(frozen=True)
class RunningCell:
    """The guarded cell running, or the last one: ``first_line`` is its first line of code."""

    cell_id: str | None
    execution_count: int | None
    first_line: str


@dataclass(frozen=True)
class DeviceState:
    """One watched device's last sample; ``uuid`` is NVML's (none for a simulated device)."""

    index: int
    name: str
    simulated: bool
    used_bytes: int | None
    total_bytes: int | None
    allocator_bytes: int | None
    utilization_percent: int | None
    temperature_c: int | None
    uuid: str | None = None


@dataclass(frozen=True)
class KernelState:
    """``running``: a guarded cell runs now; ``outcome`` of the last one (``ok``, ``error``,
    ``fixed`` by a retry) once it has ended. Times are Unix seconds; ``phase`` is Keras'
    ``fit``/``evaluate``/``predict``, ``step`` the steps done, ``last_step_at`` the last one's time.
    ``host_available_bytes`` of ``host_total_bytes`` is the machine's memory at the last sample and
    ``platform`` the kernel's ``sys.platform``: what a post-mortem tells an out-of-memory kill or a
    Windows GPU timeout by. ``host`` is the name of the machine the kernel runs on, which a
    frontend names for the GPUs of a kernel its server cannot see."""

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
    host_available_bytes: int | None = None
    host_total_bytes: int | None = None
    platform: str | None = None
    host: str | None = None
    version: int = SCHEMA_VERSION


@dataclass(frozen=True)
class StateReport:
    """The kernel's state record, sent on the comm ``ipy_gpuguard.actions`` to a frontend whose
    handshake asked for it (``{"reports": ["state"]}``): pushed with each write of the state file
    (at most once a second while a guarded cell runs, and as it starts and ends), and answered
    to ``{"ask": "state"}``. The kernel's channels reach the frontend wherever the kernel runs (a
    gateway, another machine), where the server's state file and NVML do not."""

    state: KernelState
    version: int = SCHEMA_VERSION


@dataclass(frozen=True)
class PostMortem:
    """Why a kernel most likely died, read from its last record.

    ``cause`` is ``host_memory`` (the machine ran out of memory: the OS killed the process),
    ``gpu_timeout`` (Windows reset a GPU that stopped answering: TDR, DirectML), ``gpu_fault``
    (the GPU reported a fault) or ``unknown``; ``remedies`` are what to do, one sentence each.
    """

    state: KernelState
    cause: str
    title: str
    why: str
    remedies: tuple[str, ...]
    version: int = SCHEMA_VERSION


#: The most a state file may hold: a record is a few kB.
MAX_STATE_BYTES = 1 << 20


def read_state(path: Path) -> KernelState | None:
    """The record in a kernel's state file; ``None`` when there is none; ``ValueError`` (a
    short sentence, no path) when the file is not one.

    Read as a regular file only (see :mod:`.files`), at most :data:`MAX_STATE_BYTES`: a link
    planted in the runtime folder (to the server's own ``jpserver-<pid>.json`` and its token)
    is not served, and a FIFO refuses at once instead of blocking whoever reads.
    """
    try:
        raw = read_regular(path, MAX_STATE_BYTES)
    except OSError as error:
        raise ValueError(f"the state file cannot be read: {os_reason(error)}") from None
    except ValueError as error:
        raise ValueError(f"the state file cannot be read: {error}") from None
    return None if raw is None else decode_state(raw)


def decode_state(raw: bytes) -> KernelState:
    """A state record from the bytes of its file, as strictly as the schema describes it:
    finite numbers, the schema's types, no field it does not name; ``ValueError`` otherwise."""
    import jsonschema  # the server's reads only: the kernel writes, and never decodes

    try:
        data = json.loads(raw, parse_constant=_not_a_number, parse_float=_finite)
    except (ValueError, RecursionError) as error:  # RecursionError: nested without end
        raise ValueError(f"the state file is not JSON ({_first_line(error)})") from None
    validator = jsonschema.Draft202012Validator(
        {"$ref": "#/$defs/KernelState", "$defs": schema()["$defs"]}
    )
    problem = next(iter(validator.iter_errors(data)), None)
    if problem is not None:
        where = "/".join(map(str, problem.absolute_path)) or "the record"
        raise ValueError(
            f"the state file is not a state record ({where}: {_first_line(problem.message)})"
        )
    return kernel_state_of(data)


def _not_a_number(constant: str) -> float:
    raise ValueError(f"{constant} is not a number of JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} is out of range")
    return value


def _first_line(error: object, limit: int = 120) -> str:
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


def kernel_state_of(data: Mapping[str, Any]) -> KernelState:
    """A state record from its JSON; ``ValueError`` when it is not one."""
    try:
        cell = data.get("cell")
        return KernelState(
            **{
                **data,
                "cell": RunningCell(**cell) if cell is not None else None,
                "devices": tuple(DeviceState(**device) for device in data.get("devices", ())),
            }
        )
    except (TypeError, AttributeError) as error:
        raise ValueError(f"not a kernel state record: {error}") from None


def state_folder(runtime_dir: str | Path) -> Path:
    """Where every kernel's state file lives: the guard's folder in Jupyter's runtime directory."""
    return Path(runtime_dir) / "ipy_gpuguard"


def state_path(runtime_dir: str | Path, kernel_id: str) -> Path:
    """The state file of the kernel ``kernel_id``: ``<runtime dir>/ipy_gpuguard/kernel-<id>.json``."""
    return state_folder(runtime_dir) / f"kernel-{kernel_id}.json"
