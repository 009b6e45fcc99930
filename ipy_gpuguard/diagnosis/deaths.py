"""Why a kernel died, from the facts its last record holds: the causes of the post-mortem, in
the catalog beside the rules, with their remedies from the one remedy catalog.

A kernel that the OS kills (out of host memory) or that a Windows GPU reset aborts (TDR,
DirectML) cannot say why itself; what it recorded at most a second before can.
"""

from __future__ import annotations

from dataclasses import dataclass

from .remedies import resolved
from .stack import UNKNOWN

#: Below this share of the machine's memory available at the last sample, the OS's
#: out-of-memory killer is the likely end (the last sample is up to a second old).
HOST_MEMORY_LOW = 0.10
#: Windows resets a GPU whose work has not answered for 2 s (TDR's default delay).
TDR_DELAY_S = 2.0


@dataclass(frozen=True)
class Death:
    """A cause of a kernel's death: ``why`` is a template the record's facts fill in."""

    id: str
    title: str
    why: str
    remedies: tuple[str, ...]

    def remedy_lines(self) -> tuple[str, ...]:
        """Each remedy in one line: its title and its steps, in the words that name no
        framework (the server that writes the post-mortem does not know the kernel's)."""
        lines = []
        for name in self.remedies:
            remedy = resolved(name, {}, None, UNKNOWN)
            if remedy is not None:
                lines.append(f"{remedy.title}: {' '.join(remedy.steps) or remedy.why}")
        return tuple(lines)


DEATHS: dict[str, Death] = {
    death.id: death
    for death in (
        Death(
            "host_memory",
            "Out of host memory: the OS killed the kernel",
            "The machine had {available} of memory left at the kernel's last record: the "
            "operating system's out-of-memory killer ends the largest process, with no error "
            "to show.",
            ("host_memory", "smaller_batch"),
        ),
        Death(
            "gpu_timeout",
            "The GPU stopped answering and Windows reset it",
            "A GPU operation ran longer than the display driver's timeout allows (Windows TDR, "
            "{delay:g} s by default); the driver reset the device and DirectML/TensorFlow "
            "aborted the process.",
            ("smaller_work", "tdr_registry", "update_driver"),
        ),
        Death(
            "gpu_fault",
            "The GPU reported a fault",
            "The kernel last recorded {rule}; the process died with the device in that state.",
            ("check_hardware", "locate_fault"),
        ),
        Death(
            "unknown",
            "The kernel died without an error",
            "The process ended without a Python exception: a crash in native code (a driver, a "
            "library), os._exit, or a signal from outside.",
            ("kernel_log",),
        ),
    )
}


def likely_death(
    last_rule_id: str | None,
    host_available_bytes: int | None,
    host_total_bytes: int | None,
    windows_step_outran_tdr: bool,
) -> Death:
    """The likely cause from the last record: host memory first (it outranks the last
    diagnosis), then a GPU reset, then a fault the guard diagnosed."""
    rule = last_rule_id or ""
    available, total = host_available_bytes, host_total_bytes
    if available is not None and total and available < HOST_MEMORY_LOW * total:
        return DEATHS["host_memory"]
    if rule.startswith("hang.directml") or windows_step_outran_tdr:
        return DEATHS["gpu_timeout"]
    if rule.startswith("fault."):
        return DEATHS["gpu_fault"]
    return DEATHS["unknown"]
