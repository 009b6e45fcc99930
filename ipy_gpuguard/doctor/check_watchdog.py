"""The GPU watchdog of each visible GPU, read by the hang watchdog's own platform probe."""

from __future__ import annotations

from .findings import Findings
from .model import Status, Verdict


def gpu_watchdog(findings: Findings) -> Verdict:
    """A GPU that resets after a few seconds of one kernel limits the batch a step may take."""
    nvml = findings.nvml
    if nvml.problem is not None:
        return Verdict(Status.UNKNOWN, nvml.problem)
    timeouts = findings.gpu_timeouts
    if not timeouts:
        return Verdict(Status.UNKNOWN, "no visible GPU")
    details = tuple(timeout.text for timeout in timeouts)
    active = [timeout for timeout in timeouts if timeout.active]
    if active:
        remedy_ids = ["smaller_work"]
        if findings.machine.platform == "win32":
            remedy_ids += ["tcc_mode", "tdr_registry"]
        return Verdict(
            Status.WARNING,
            "; ".join(f"GPU {t.index}: {t.reason}" for t in active)
            + ": a training step longer than that fails",
            details,
            findings.remedies(*remedy_ids, device_index=str(active[0].index)),
        )
    if all(timeout.active is None for timeout in timeouts):
        reasons = sorted({timeout.reason for timeout in timeouts})
        return Verdict(Status.UNKNOWN, "; ".join(reasons), details)
    return Verdict(Status.OK, "no GPU has a run-time limit on its work", details)
