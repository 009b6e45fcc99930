"""Which physical GPUs a CUDA framework sees, from ``CUDA_VISIBLE_DEVICES``.

NVML ignores ``CUDA_VISIBLE_DEVICES`` and numbers every GPU on the machine, while TensorFlow's
``GPU:0`` is the first *visible* one. The panel must show the framework's devices, so this module
reproduces the CUDA runtime's reading of the variable: integer indices, ``GPU-`` UUIDs (a unique
prefix is enough), ``MIG-`` UUIDs and the older ``MIG-GPU-<uuid>/<gi>/<ci>`` form; the list ends
at the first entry that names no device, and an empty value hides every GPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class PhysicalDevice:
    """A device NVML can address: a whole GPU, or one MIG instance of it (``mig_index`` set)."""

    nvml_index: int
    uuid: str
    mig_index: int | None = None
    parent_uuid: str | None = None
    gpu_instance_id: int | None = None
    compute_instance_id: int | None = None


def select_visible(
    gpus: Sequence[PhysicalDevice],
    migs: Sequence[PhysicalDevice],
    cuda_visible_devices: str | None,
) -> list[PhysicalDevice]:
    """Return the devices the framework sees, in its order (its ``GPU:0`` first).

    Parameters
    ----------
    gpus
        Whole GPUs in NVML order.
    migs
        MIG instances of the GPUs that have MIG enabled.
    cuda_visible_devices
        The variable's value, ``None`` when it is unset (every whole GPU is visible).
    """
    if cuda_visible_devices is None:
        return list(gpus)
    visible: list[PhysicalDevice] = []
    for entry in (part.strip() for part in cuda_visible_devices.split(",")):
        device = _resolve(entry, gpus, migs)
        if device is None:
            break  # the CUDA runtime ignores everything after an entry it cannot resolve
        if device not in visible:
            visible.append(device)
    return visible


def _resolve(
    entry: str, gpus: Sequence[PhysicalDevice], migs: Sequence[PhysicalDevice]
) -> PhysicalDevice | None:
    if entry.isdigit():
        index = int(entry)
        return gpus[index] if index < len(gpus) else None
    if entry.startswith("MIG-GPU-"):
        return _resolve_legacy_mig(entry[len("MIG-") :], migs)
    if entry.startswith("MIG-"):
        return _unique_prefix_match(entry, migs)
    if entry.startswith("GPU-"):
        return _unique_prefix_match(entry, gpus)
    return None


def _unique_prefix_match(prefix: str, devices: Sequence[PhysicalDevice]) -> PhysicalDevice | None:
    matches = [device for device in devices if device.uuid.startswith(prefix)]
    return matches[0] if len(matches) == 1 else None


def _resolve_legacy_mig(spec: str, migs: Sequence[PhysicalDevice]) -> PhysicalDevice | None:
    """``GPU-<uuid>/<gpu instance>/<compute instance>``, the form drivers before R470 used."""
    parent_uuid, _, ids = spec.partition("/")
    gi, _, ci = ids.partition("/")
    if not (gi.isdigit() and ci.isdigit()):
        return None
    for device in migs:
        if (
            device.parent_uuid == parent_uuid
            and device.gpu_instance_id == int(gi)
            and device.compute_instance_id == int(ci)
        ):
            return device
    return None
