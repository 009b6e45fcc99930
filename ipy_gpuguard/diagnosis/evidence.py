"""Memory evidence for an out-of-memory failure, and how large a batch would fit.

The estimate assumes memory grows in proportion to the batch, which holds for activations
(the bulk of training memory) but not for weights and optimizer state; it is a starting point
for a search, and the card calls it an estimate.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..telemetry.units import format_bytes
from .context import Context, DeviceMemory
from .model import FactValue

#: Headroom kept below the device's capacity: fragmentation and workspace need some.
SAFETY_MARGIN = 0.1


def memory_evidence(facts: dict[str, FactValue], context: Context) -> list[str]:
    """Lines comparing peaks and the failed allocation with capacity; adds ``fit_fraction``."""
    device = failed_device(facts, context.devices)
    total = _int(facts.get("total_bytes")) or (device.total_bytes if device else None)
    requested = _int(facts.get("requested_bytes"))
    lines = []
    if device is not None and device.simulated:
        lines.append(
            f"GPU {device.index} is simulated (GPUGUARD_SIMULATE): it stands for this process's "
            "memory, and the error is the framework's real CPU allocator running out."
        )
    if device is not None and device.total_bytes:
        lines += _peak_lines(device)
    if requested and total and requested > total:
        lines.append(
            f"The failed allocation alone ({format_bytes(requested)}) is "
            f"{times(requested / total)} the device's {format_bytes(total)}."
        )
    in_use = (device.peak_allocator_bytes or device.peak_used_bytes) if device else None
    in_use = in_use or _int(facts.get("allocated_bytes"))
    fraction = fit_fraction(total, in_use, requested)
    if fraction is not None:
        facts["fit_fraction"] = fraction
    return lines


def times(ratio: float) -> str:
    """``1.5×``, ``37×``, ``212,992×``: a ratio as people read it, never ``212992.0×``."""
    return f"{ratio:.1f}×" if ratio < 10 else f"{ratio:,.0f}×"


def fit_fraction(total: int | None, in_use: int | None, requested: int | None) -> float | None:
    """The share of the current batch that should fit, or ``None`` when it cannot be told."""
    if not total or not requested:
        return None
    needed = (in_use or 0) + requested
    fraction = total * (1 - SAFETY_MARGIN) / needed
    return round(fraction, 3) if fraction < 1 else None


def failed_device(
    facts: Mapping[str, FactValue], devices: tuple[DeviceMemory, ...]
) -> DeviceMemory | None:
    """The watched device the failure happened on: by its index, or the only one watched.

    A simulated device stands for the CPU whose allocator it shows, so ``CPU:0`` maps to it.
    """
    device = facts.get("device")
    index = device.rsplit(":", 1)[-1] if isinstance(device, str) else ""
    for candidate in devices:
        same_index = index.isdigit() and candidate.index == int(index)
        if same_index and (not str(device).startswith("CPU") or candidate.simulated):
            return candidate
    return devices[0] if len(devices) == 1 and not index.isdigit() else None


def _peak_lines(device: DeviceMemory) -> list[str]:
    assert device.total_bytes
    name = f"GPU {device.index} ({device.name}{', simulated' if device.simulated else ''})"
    lines = []
    if device.peak_used_bytes is not None:
        share = device.peak_used_bytes / device.total_bytes
        lines.append(
            f"{name}: peak {format_bytes(device.peak_used_bytes)} of "
            f"{format_bytes(device.total_bytes)} ({share:.0%}) before the failure."
        )
    if device.peak_allocator_bytes is not None:
        whose = (
            f"{device.allocator_framework}'s" if device.allocator_framework else "The framework's"
        )
        lines.append(f"{whose} allocator peaked at {format_bytes(device.peak_allocator_bytes)}.")
    for pid, used in device.other_processes:
        lines.append(
            f"Another process (pid {pid}) holds {format_bytes(used)} on GPU {device.index}."
        )
    return lines


def _int(value: FactValue | None) -> int | None:
    return value if isinstance(value, int) else None
