"""What the server extension tells the GPU meter: every GPU, and each kernel's share of them."""

from __future__ import annotations

from dataclasses import dataclass

from .encode import SCHEMA_VERSION


@dataclass(frozen=True)
class MeterDevice:
    """One GPU as the server reads it; ``problem`` says why its values are unknown; ``uuid`` is
    NVML's, which a kernel's own report of the same GPU carries too."""

    index: int
    name: str
    simulated: bool
    used_bytes: int | None
    total_bytes: int | None
    utilization_percent: int | None
    temperature_c: int | None
    problem: str | None
    uuid: str | None = None


@dataclass(frozen=True)
class KernelShare:
    """The GPU memory held by one kernel of this server (its process and its children)."""

    kernel_id: str
    pids: tuple[int, ...]
    used_bytes: int


@dataclass(frozen=True)
class MeterReading:
    """One reading, shared by every client of the server.

    ``source`` is ``nvml``, ``simulated`` or ``none`` (then ``reason`` says why in one line);
    ``attribution`` is ``None`` when ``kernels`` can be trusted, else why they cannot (NVML
    reports the pids of another pid namespace, as in a container); ``local_kernels`` are the
    kernels whose process the server sees (a kernel behind a gateway is not one of them: its GPUs
    are known only from its own report).
    """

    source: str
    reason: str | None
    updated_at: float
    devices: tuple[MeterDevice, ...]
    kernels: tuple[KernelShare, ...]
    attribution: str | None
    local_kernels: tuple[str, ...] = ()
    version: int = SCHEMA_VERSION
