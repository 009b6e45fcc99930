"""ipy_gpuguard: guard TensorFlow/Keras training cells on GPUs in IPython and Jupyter.

``%load_ext ipy_gpuguard``, then ``%%gpuguard`` on a training cell. Importing this package is
cheap: no framework, no NVML and no widget library is imported until a guarded cell needs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__

__all__ = [
    "Diagnosis",
    "__version__",
    "diagnose",
    "heartbeat",
    "load_ipython_extension",
    "unload_ipython_extension",
]

if TYPE_CHECKING:
    from .diagnosis import Diagnosis, diagnose
    from .watchdog.progress import heartbeat


def __getattr__(name: str) -> Any:
    """``diagnose``, ``Diagnosis`` and ``heartbeat``, imported when first used."""
    if name in ("diagnose", "Diagnosis"):
        from . import diagnosis

        return getattr(diagnosis, name)
    if name == "heartbeat":
        from .watchdog.progress import heartbeat

        globals()["heartbeat"] = heartbeat  # later calls in a training loop skip this lookup
        return heartbeat
    raise AttributeError(f"module 'ipy_gpuguard' has no attribute {name!r}")


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    """The jupyter_server extension (``ipy_gpuguard.server``), enabled by the config file
    installed with the package; jupyter_server alone calls this, so the import is here."""
    from .server import GPUGuardServer

    return [{"module": "ipy_gpuguard.server", "app": GPUGuardServer}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """The prebuilt lab extension (``labextension/``, built into ``ipy_gpuguard/labextension``),
    for ``jupyter labextension develop``; a wheel installs it as data files."""
    return [{"src": "labextension", "dest": "ipy-gpuguard"}]


def load_ipython_extension(ipython: Any) -> None:
    """Called by ``%load_ext ipy_gpuguard``."""
    from .shell import load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """Called by ``%unload_ext ipy_gpuguard`` (and ``%reload_ext``)."""
    from .shell import unload

    unload(ipython)
