"""``%gpuguard doctor``: check the GPU environment before training, and explain what is wrong.

One probe per fact (versions, TensorFlow's build, the driver, the CUDA libraries that load,
the GPUs each layer sees, memory settings, other processes, the GPU watchdog). Every probe
reads from a :class:`Machine`, which tests replace; a probe that fails says "could not check"
and why. The doctor changes nothing: frameworks are imported in child processes only.
"""

from __future__ import annotations

from .machine import Machine
from .model import Check, Report, Status
from .run import CHECKS, run_doctor

__all__ = ["CHECKS", "Check", "Machine", "Report", "Status", "run_doctor"]
