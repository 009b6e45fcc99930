"""Loading and unloading the extension: register exactly what unloading removes."""

from __future__ import annotations

from typing import Any

from .config import GPUGuard
from .magics import GPUGuardMagics, ShellRunner
from .session import GuardSession


def load(shell: Any) -> None:
    """Register the magics, the configurable, the cell transformer and the event hooks, once."""
    if _loaded_magics(shell) is not None:
        return  # loading twice is harmless
    config = GPUGuard(parent=shell)
    # A Jupyter kernel's shell has a kernel: its frontend can render live widgets.
    session = GuardSession(
        config,
        live=getattr(shell, "kernel", None) is not None,
        runner=ShellRunner(shell),
        name_cell=lambda filename: _cell_name(shell, filename),
    )
    magics = GPUGuardMagics(shell, session)
    shell.register_magics(magics)
    shell.configurables.append(config)
    shell.input_transformers_cleanup.append(magics.transformer)
    shell.events.register("pre_run_cell", magics.pre_run_cell)
    shell.events.register("post_run_cell", magics.post_run_cell)


def unload(shell: Any) -> None:
    """Stop every thread and remove everything :func:`load` registered."""
    magics = _loaded_magics(shell)
    if magics is None:
        return
    try:
        magics.session.close()
    finally:
        shell.events.unregister("pre_run_cell", magics.pre_run_cell)
        shell.events.unregister("post_run_cell", magics.post_run_cell)
        shell.input_transformers_cleanup.remove(magics.transformer)
        shell.configurables.remove(magics.session.config)
        shell.configurables.remove(magics)  # Magics.__init__ added itself
        manager = shell.magics_manager
        del manager.magics["line"]["gpuguard"]
        del manager.magics["cell"]["gpuguard"]
        del manager.registry[type(magics).__name__]


def _cell_name(shell: Any, filename: str) -> str | None:
    """``Cell In[5]`` for a cell's file, as IPython's tracebacks name it."""
    named = shell.compile.format_code_name(filename)
    return " ".join(named) if named else None


def _loaded_magics(shell: Any) -> GPUGuardMagics | None:
    registered = shell.magics_manager.registry.get(GPUGuardMagics.__name__)
    return registered if isinstance(registered, GPUGuardMagics) else None
