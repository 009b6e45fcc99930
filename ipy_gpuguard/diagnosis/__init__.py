"""Diagnosis of GPU failures: from an error to what went wrong, the facts, and what to do.

Imports neither IPython, ipywidgets nor a framework: errors are recognised by the qualified
names of their types and by their text, so it is tested without a shell, a kernel or a GPU.
"""

from __future__ import annotations

from .context import Context, DeviceMemory
from .diagnose import diagnose
from .likely import LIKELY_RULES
from .model import Diagnosis, FactValue, Kind, Remedy
from .remedies import REMEDIES
from .rules import RULES, Rule

__all__ = [
    "LIKELY_RULES",
    "REMEDIES",
    "RULES",
    "Context",
    "DeviceMemory",
    "Diagnosis",
    "FactValue",
    "Kind",
    "Remedy",
    "Rule",
    "diagnose",
]
