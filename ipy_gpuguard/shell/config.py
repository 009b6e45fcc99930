"""The defaults of every guarded cell, as one traitlets ``Configurable``.

``%config GPUGuard.interval = 0.25`` in a notebook and ``c.GPUGuard.interval = 0.25`` in
``ipython_config.py`` set them as for any IPython component; the options of ``%%gpuguard``
override them for one cell.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any

from traitlets import (
    Bool,
    CaselessStrEnum,
    Float,
    Int,
    List,
    TraitError,
    Unicode,
    default,
    validate,
)
from traitlets.config import Configurable

from ..telemetry.units import parse_size_list
from ..watchdog.limits import ADAPTIVE_FACTOR, ADAPTIVE_FLOOR_S, FIRST_STEP_ALLOWANCE_S
from .options import ON_HANG_CHOICES, check_interval, check_timeout


class BadSetting(TraitError):
    """A setting ``GPUGuard`` refuses: IPython shows this one line, never a traceback."""

    def _render_traceback_(self) -> list[str]:
        return [f"TraitError: {self}"]


class GPUGuard(Configurable):
    """Defaults of ``%%gpuguard``."""

    interval = Float(
        0.5, help="Seconds between two telemetry samples while a guarded cell runs."
    ).tag(config=True)
    devices = List(
        Int(),
        [],
        help="Framework indices of the GPUs to watch (GPU:0 is 0); empty for all visible.",
    ).tag(config=True)
    panel = Bool(True, help="Show the live memory panel above a guarded cell's output.").tag(
        config=True
    )
    simulate = Unicode(
        help=(
            "Sizes of simulated GPUs shown when NVML finds none, like '8GiB' or '8GiB,16GiB'; "
            "empty for none. Defaults to the GPUGUARD_SIMULATE environment variable."
        )
    ).tag(config=True)

    timeout = Float(
        None,
        allow_none=True,
        help=(
            "Seconds without progress after which a guarded cell is reported as stalled; None "
            f"for adaptive: {ADAPTIVE_FACTOR:g} times the median step, at least "
            f"{ADAPTIVE_FLOOR_S:g} s."
        ),
    ).tag(config=True)
    on_hang = CaselessStrEnum(
        ON_HANG_CHOICES,
        "report",
        help="What the watchdog does on a stall: show the hang card (report), or also interrupt.",
    ).tag(config=True)
    first_step_allowance = Float(
        FIRST_STEP_ALLOWANCE_S,
        help=(
            "Seconds the first step of fit, evaluate or predict may take without being a stall, "
            "whatever the timeout: it traces the model and may compile it with XLA."
        ),
    ).tag(config=True)

    free_memory_on_oom = Bool(
        True,
        help=(
            "After an out-of-memory error, clear the failed call's frames and collect, so its "
            "tensors are freed; %debug then has nothing to inspect."
        ),
    ).tag(config=True)
    native_log = Bool(
        True,
        help=(
            "Read the framework's native log (file descriptor 2) during a guarded cell for the "
            "diagnosis; the lines still show as before."
        ),
    ).tag(config=True)
    incident_log = Unicode(
        help=(
            "File the incidents are appended to, one JSON line each; empty for none. Defaults "
            "to ipy_gpuguard/incidents.jsonl in the Jupyter data directory."
        )
    ).tag(config=True)
    batch_memory = Unicode(
        help=(
            "File of the batch sizes that fitted, per cell and device size, from which a retry "
            "starts; empty for none. Defaults to ipy_gpuguard/batch_sizes.json in the Jupyter "
            "data directory."
        )
    ).tag(config=True)
    log_cell_source = Bool(
        False, help="Also write the failed cell's source into the incident log."
    ).tag(config=True)

    @default("incident_log")
    def _incident_log_in_jupyter_data_dir(self) -> str:
        from jupyter_core.paths import jupyter_data_dir

        return os.path.join(jupyter_data_dir(), "ipy_gpuguard", "incidents.jsonl")

    @default("batch_memory")
    def _batch_memory_in_jupyter_data_dir(self) -> str:
        from jupyter_core.paths import jupyter_data_dir

        return os.path.join(jupyter_data_dir(), "ipy_gpuguard", "batch_sizes.json")

    @default("simulate")
    def _simulate_from_environment(self) -> str:
        return os.environ.get("GPUGUARD_SIMULATE", "")

    @validate("interval")
    def _valid_interval(self, proposal: dict[str, float]) -> float:
        try:
            return check_interval(proposal["value"])
        except ValueError as error:
            raise BadSetting(f"GPUGuard.interval: {error}") from None

    @validate("timeout", "first_step_allowance")
    def _positive_seconds(self, proposal: dict[str, Any]) -> float | None:
        value = proposal["value"]
        try:
            return None if value is None else check_timeout(value)
        except ValueError as error:
            raise BadSetting(f"GPUGuard.{proposal['trait'].name}: {error}") from None

    @validate("simulate")
    def _valid_sizes(self, proposal: dict[str, str]) -> str:
        value = proposal["value"]
        try:
            if value.strip().lower() not in ("", "off"):
                parse_size_list(value)
        except ValueError as error:
            raise BadSetting(
                f"GPUGuard.simulate (or GPUGUARD_SIMULATE): {error}; give sizes like 8GiB or "
                "8GiB,16GiB"
            ) from None
        return "" if value.strip().lower() == "off" else value

    @validate("incident_log", "batch_memory")
    def _valid_path(self, proposal: dict[str, Any]) -> str:
        value: str = proposal["value"]
        if "\0" in value:  # every later open of it would fail ("embedded null byte")
            raise BadSetting(
                f"GPUGuard.{proposal['trait'].name}: {value!r} holds a NUL byte, which no path "
                "can; give a file's path, or '' for none"
            )
        return value

    @validate("devices")
    def _valid_devices(self, proposal: dict[str, list[object]]) -> list[object]:
        devices = proposal["value"]
        if not all(isinstance(index, int) and index >= 0 for index in devices):
            raise BadSetting(
                f"GPUGuard.devices must be device indices like [0, 1], not {devices!r}"
            )
        return devices


def configured(parent: Any) -> GPUGuard:
    """The settings of ``parent`` (the shell); each one refused is said in one line and left
    at its default, so that a bad value in ``ipython_config.py``, in an earlier ``%config`` or
    in ``GPUGUARD_SIMULATE`` never stops the extension from loading."""
    for _ in range(len(GPUGuard.class_trait_names()) + 1):
        try:
            config = GPUGuard(parent=parent)
            # A dynamic default (GPUGUARD_SIMULATE) is not validated unless set: check it now.
            config.simulate = config.simulate
            return config
        except TraitError as error:
            name = _setting_of(error)
            print(f"ipy_gpuguard: {error}; GPUGuard.{name} stays at its default", file=sys.stderr)
            section = parent.config.GPUGuard
            if name in section:
                del section[name]
            if name == "simulate":
                section.simulate = ""  # GPUGUARD_SIMULATE is refused: no simulated devices
    raise AssertionError("unreachable: every setting falls back to its default")


def _setting_of(error: TraitError) -> str:
    """The trait a refusal names: ours say ``GPUGuard.name:``, traitlets' ``The 'name' trait``."""
    match = re.search(r"GPUGuard\.(\w+)|The '(\w+)' trait", str(error))
    return (match.group(1) or match.group(2)) if match else ""
