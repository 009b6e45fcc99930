"""Everything that touches IPython: loading and unloading, the magics, the session that owns all
state between cells, the guarded run, freeing memory, the cards' displays and the dispatcher of
their actions, the comm of the lab extension, the kernel's state file and the incident log."""

from .extension import load, unload

__all__ = ["load", "unload"]
