"""What a framework sees, read in a child process (see :mod:`.child`) and kept as plain data."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .child import MARKER

#: Importing TensorFlow takes seconds; a child still importing after this is reported, not awaited.
CHILD_TIMEOUT_S = 180.0
#: The child logs everything it can and allocates nothing up front, whatever the person set.
_CHILD_ENVIRONMENT = {"TF_CPP_MIN_LOG_LEVEL": "0", "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
#: Lines of a framework's log that say why it sees no GPU, or fewer than there are.
_GPU_MESSAGES = re.compile(
    r"Could not load dynamic library|Cannot dlopen|Could not find cuda drivers|failed call to "
    r"cuInit|Ignoring visible gpu device|cannot open shared object file|DLL load failed|driver "
    r"version is insufficient|CUDA driver version is insufficient|Loaded runtime CuDNN library|"
    r"CUDA-enabled jaxlib is not installed|An NVIDIA GPU may be present|Unable to initialize "
    r"backend 'cuda'|Found no NVIDIA driver|CUDA initialization"
)
#: absl's prefix: ``W0000 00:00:1700000000.000000   1234 cuda_dnn.cc:522] ``.
_LOG_PREFIX = re.compile(r"^[IWEF]\d{4} [\d:.]+\s+\d+ \S+:\d+\] ")
_KEPT_MESSAGES = 6


@dataclass(frozen=True)
class FrameworkView:
    """What one framework saw in a child process.

    Parameters
    ----------
    import_error
        ``import`` raised: the framework is installed but broken, which is a finding.
    failure
        The child crashed or timed out: nothing could be read, which is "could not check".
    messages
        The framework's own log lines about GPUs and their libraries, prefixes removed.
    """

    framework: str
    version: str | None = None
    build: Mapping[str, Any] = field(default_factory=dict)
    gpus: tuple[str, ...] = ()
    #: The model of each GPU in :attr:`gpus`, in the framework's own order (its ``GPU:0`` first).
    gpu_names: tuple[str, ...] = ()
    import_error: str | None = None
    failure: str | None = None
    messages: tuple[str, ...] = ()
    seconds: float = 0.0

    @property
    def usable(self) -> bool:
        """The framework imported and was read."""
        return self.import_error is None and self.failure is None


def read_in_child(
    framework: str, environ: Mapping[str, str] | None = None, timeout_s: float = CHILD_TIMEOUT_S
) -> FrameworkView:
    """Import ``framework`` (``tensorflow``, ``torch``, ``jax``) in a child and read what it sees."""
    environment = {**(os.environ if environ is None else environ), **_CHILD_ENVIRONMENT}
    command = [sys.executable, "-m", "ipy_gpuguard.doctor.child", framework]
    started = time.perf_counter()
    try:
        child = subprocess.run(
            command,
            capture_output=True,
            text=True,
            errors="replace",
            env=environment,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return FrameworkView(
            framework, failure=f"importing it took longer than {timeout_s:g} s", seconds=timeout_s
        )
    except OSError as error:
        return FrameworkView(framework, failure=f"could not start a child process: {error}")
    return view_of_child(
        framework, child.returncode, child.stdout, child.stderr, time.perf_counter() - started
    )


def view_of_child(
    framework: str, returncode: int, stdout: str, stderr: str, seconds: float
) -> FrameworkView:
    """Read the child's JSON line and the framework's messages about GPUs from its output."""
    messages = gpu_messages(stderr)
    lines = [line for line in stdout.splitlines() if line.startswith(MARKER)]
    if returncode != 0 or not lines:
        how = f"was killed by signal {-returncode}" if returncode < 0 else f"exited {returncode}"
        last = [line for line in stderr.strip().splitlines() if line.strip()][-3:]
        return FrameworkView(
            framework,
            failure=f"importing it in a child process failed: the child {how}",
            messages=messages or tuple(last),
            seconds=seconds,
        )
    seen = json.loads(lines[-1][len(MARKER) :])
    return FrameworkView(
        framework,
        version=seen.get("version"),
        build=seen.get("build", {}),
        gpus=tuple(seen.get("gpus", ())),
        gpu_names=tuple(seen.get("gpu_names", ())),
        import_error=seen.get("import_error"),
        messages=messages,
        seconds=seconds,
    )


def gpu_messages(log: str) -> tuple[str, ...]:
    """The last few distinct lines of ``log`` that bear on GPUs, without absl's prefix."""
    kept: list[str] = []
    for line in log.splitlines():
        if _GPU_MESSAGES.search(line):
            message = _LOG_PREFIX.sub("", line.strip())
            if message not in kept:
                kept.append(message)
    return tuple(kept[-_KEPT_MESSAGES:])
