"""The installed version, whose one source is labextension/package.json (see setup.py)."""

from importlib import metadata

__version__ = metadata.version("ipy_gpuguard")
