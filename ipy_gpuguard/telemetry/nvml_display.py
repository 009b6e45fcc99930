"""What NVML says of a GPU's display: its driver model (Windows only) and whether it drives a
display. The GPU's own watchdog (``watchdog/gpu_timeout``) depends on both; NVML is opened
here, in telemetry, like every other NVML call of the package.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .model import DeviceInfo, TelemetryUnavailable
from .nvml import import_pynvml

_DRIVER_MODELS = {0: "WDDM", 1: "TCC", 2: "MCDM"}


@dataclass(frozen=True)
class DisplayFacts:
    """What NVML says of a GPU's driver model (Windows only) and display; ``None``: unknown."""

    driver_model: str | None = None
    display_active: bool | None = None


def read_displays(
    devices: tuple[DeviceInfo, ...], nvml: ModuleType | None = None
) -> dict[int, DisplayFacts]:
    """Each device's display facts by index; none where NVML is missing or does not start.

    ``nvml`` is the ``pynvml`` module (tests give a fake); by default it is imported.
    """
    if nvml is None:
        try:
            nvml = import_pynvml()
        except TelemetryUnavailable:
            return {}
    try:
        nvml.nvmlInit()
    except Exception:  # NVMLError of any kind: the facts stay unknown
        return {}
    try:
        return {info.index: _display(nvml, info) for info in devices}
    finally:
        nvml.nvmlShutdown()


def _display(nvml: ModuleType, info: DeviceInfo) -> DisplayFacts:
    try:
        if info.uuid:
            handle = nvml.nvmlDeviceGetHandleByUUID(info.uuid)
        else:
            handle = nvml.nvmlDeviceGetHandleByIndex(info.index)
    except nvml.NVMLError:
        return DisplayFacts()
    model = _quiet(nvml, lambda: nvml.nvmlDeviceGetDriverModel(handle))
    active = _quiet(nvml, lambda: nvml.nvmlDeviceGetDisplayActive(handle))
    return DisplayFacts(
        driver_model=_DRIVER_MODELS.get(model[0]) if model else None,
        display_active=None if active is None else bool(active),
    )


def _quiet(nvml: ModuleType, call: Callable[[], Any]) -> Any:
    try:
        return call()
    except nvml.NVMLError:
        return None  # not supported on this platform or GPU
