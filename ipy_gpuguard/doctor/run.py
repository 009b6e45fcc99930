"""Run every check; a check that raises becomes "could not check", never the doctor's crash."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from . import check_driver_log, check_gpus, check_memory, check_software, check_watchdog
from .findings import Findings
from .machine import Machine
from .model import Check, Report, Status, Verdict

#: A check's verdict, or ``None`` when it does not apply to this machine (no row).
CheckFunction = Callable[[Findings], Verdict | None]

#: In the order a person reads them: what is installed, then whether the GPU is reached.
CHECKS: tuple[tuple[str, str, CheckFunction], ...] = (
    ("python", "Python and platform", check_software.python_and_platform),
    ("packages", "Installed frameworks", check_software.packages),
    ("tensorflow_build", "TensorFlow's build", check_software.tensorflow_build),
    ("driver", "NVIDIA driver", check_gpus.driver),
    ("cuda_libraries", "CUDA and cuDNN libraries", check_gpus.cuda_libraries),
    ("gpus", "GPUs seen", check_gpus.gpus_seen),
    ("gpu_numbers", "GPU numbers", check_gpus.gpu_numbers),
    ("tensorflow_gpu", "TensorFlow can use a GPU", check_software.tensorflow_uses_gpu),
    ("memory_settings", "Memory settings", check_memory.memory_settings),
    ("other_processes", "Other processes on the GPUs", check_memory.other_processes),
    ("gpu_watchdog", "GPU watchdog", check_watchdog.gpu_watchdog),
    ("driver_errors", "GPU driver errors (Xid)", check_driver_log.driver_errors),
)


def run_doctor(
    machine: Machine | None = None,
    announce: Callable[[str], None] = lambda message: None,
    checks: Sequence[tuple[str, str, CheckFunction]] = CHECKS,
) -> Report:
    """Check the environment of ``machine`` (this one by default).

    ``announce`` hears what takes time before it starts (importing a framework in a child).
    """
    started = time.perf_counter()
    findings = Findings(machine or Machine.this_one(), announce)
    results = [_checked(check_id, title, check, findings) for check_id, title, check in checks]
    return Report(tuple(r for r in results if r is not None), time.perf_counter() - started)


def _checked(check_id: str, title: str, check: CheckFunction, findings: Findings) -> Check | None:
    try:
        verdict = check(findings)
    except Exception as error:  # a probe's failure is a row of the report, whatever it was
        verdict = Verdict(Status.UNKNOWN, f"the check raised {type(error).__name__}: {error}")
    return Check(check_id, title, verdict) if verdict is not None else None
