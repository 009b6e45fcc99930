"""ipy_gpuguard: guard TensorFlow/Keras training cells on GPUs in IPython and Jupyter.

``%load_ext ipy_gpuguard``, then ``%%gpuguard`` on a training cell. Importing this package is
cheap: no framework, no NVML and no widget library is imported until a guarded cell needs it.
"""

from __future__ import annotations

from typing import Any

from ._version import __version__

__all__ = ["__version__", "load_ipython_extension", "unload_ipython_extension"]


def load_ipython_extension(ipython: Any) -> None:
    """Called by ``%load_ext ipy_gpuguard``."""
    from .extension import load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """Called by ``%unload_ext ipy_gpuguard`` (and ``%reload_ext``)."""
    from .extension import unload

    unload(ipython)
