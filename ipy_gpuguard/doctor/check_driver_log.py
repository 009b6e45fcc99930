"""The Xids the NVIDIA driver wrote to this boot's kernel log, read with NVIDIA's catalog.

A GPU that faulted or fell off the bus earlier in the day still explains a cell that fails now;
the driver says so only in the kernel log, which the diagnosis of one cell never sees. Reading
it needs no privilege on most distributions (``dmesg``, or ``journalctl -k`` for members of the
``adm`` or ``systemd-journal`` groups); where neither is allowed, the row says how to look.
"""

from __future__ import annotations

from collections import Counter

from ..diagnosis.xid import catalog, codes_in, decisive
from .findings import Findings
from .model import Status, Verdict

#: The Xid lines shown below the verdict, the latest last.
SHOWN_LINES = 3
_LOOK_BY_HAND = "sudo dmesg | grep -i xid shows them"


def driver_errors(findings: Findings) -> Verdict | None:
    """No row where there is no NVIDIA driver to log Xids (no NVML) or no Linux kernel log."""
    if findings.machine.platform != "linux" or findings.nvml.problem is not None:
        return None
    log = findings.machine.read_kernel_log()
    if log is None:
        return Verdict(
            Status.UNKNOWN,
            f"this user may not read the kernel log (dmesg, journalctl -k); {_LOOK_BY_HAND}",
        )
    lines = [line for line in log.splitlines() if codes_in([line])]
    codes = codes_in(lines)
    chosen = decisive(codes)
    if chosen is None:
        return Verdict(Status.OK, "no Xid in this boot's kernel log")
    counts = Counter(codes)
    details = tuple(
        f"Xid {code} ({catalog().entry(code).name}, {catalog().entry(code).kind}): "
        f"{count} time{'s' if count > 1 else ''}"
        for code, count in counts.items()
    ) + tuple(line.strip() for line in lines[-SHOWN_LINES:])
    status = Status.PROBLEM if chosen.code == 79 else Status.WARNING
    return Verdict(
        status,
        f"the driver logged Xid {chosen.code} ({chosen.name}) since boot: {chosen.action}",
        details,
        findings.remedies("check_hardware", "update_driver"),
    )
