"""Loading and unloading the extension: register exactly what unloading removes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..protocol import state_path
from .comm import TARGET, ActionsComm
from .config import GPUGuard, configured
from .magics import GPUGuardMagics, ShellRunner

if TYPE_CHECKING:
    from .kernel_state import KernelStateFile
    from .session import GuardSession


def load(shell: Any) -> None:
    """Register the magics, the configurable, the cell transformer, the event hooks and, in a
    Jupyter kernel, the comm target of the lab extension; once. The session opens when a
    guarded cell or ``%gpuguard`` first needs it."""
    if _loaded_magics(shell) is not None:
        return  # loading twice is harmless
    config = configured(shell)
    kernel = getattr(shell, "kernel", None)
    state_file = _state_file() if kernel is not None else None
    magics = GPUGuardMagics(
        shell, config, lambda: _open_session(shell, config, state_file), state_file
    )
    shell.register_magics(magics)
    shell.configurables.append(config)
    shell.input_transformers_cleanup.append(magics.transformer)
    shell.ast_transformers.append(magics.stopper)
    shell.events.register("pre_run_cell", magics.pre_run_cell)
    shell.events.register("post_run_cell", magics.post_run_cell)
    comm_manager = getattr(kernel, "comm_manager", None)
    if comm_manager is not None:
        magics.actions_comm = ActionsComm(
            lambda: magics.session, lambda: state_file.state if state_file is not None else None
        )
        if state_file is not None:
            state_file.written = magics.actions_comm.report
        comm_manager.register_target(TARGET, magics.actions_comm.opened)
        magics.actions_comm.offer()


def unload(shell: Any) -> None:
    """Stop every thread and remove everything :func:`load` registered."""
    magics = _loaded_magics(shell)
    if magics is None:
        return
    try:
        session = magics.opened_session
        if session is not None:
            session.close()
        elif magics.state_file is not None:
            magics.state_file.remove()
    finally:
        shell.events.unregister("pre_run_cell", magics.pre_run_cell)
        shell.events.unregister("post_run_cell", magics.post_run_cell)
        shell.input_transformers_cleanup.remove(magics.transformer)
        shell.ast_transformers.remove(magics.stopper)
        shell.configurables.remove(magics.guard_config)
        shell.configurables.remove(magics)  # Magics.__init__ added itself
        manager = shell.magics_manager
        del manager.magics["line"]["gpuguard"]
        del manager.magics["cell"]["gpuguard"]
        del manager.registry[type(magics).__name__]
        comm_manager = getattr(getattr(shell, "kernel", None), "comm_manager", None)
        if comm_manager is not None and magics.actions_comm is not None:
            comm_manager.unregister_target(TARGET, magics.actions_comm.opened)
            magics.actions_comm.close()


def _open_session(shell: Any, config: GPUGuard, state_file: KernelStateFile | None) -> GuardSession:
    """The session of a shell; a Jupyter kernel's shell has a kernel, whose frontend can render
    live widgets."""
    from .session import GuardSession  # the diagnosis, the retry, the widgets: imported here

    return GuardSession(
        config,
        live=getattr(shell, "kernel", None) is not None,
        runner=ShellRunner(shell),
        name_cell=lambda filename: _cell_name(shell, filename),
        state_file=state_file,
    )


def _state_file() -> KernelStateFile | None:
    """The state file of this kernel, named by its id (from its connection file)."""
    from ipykernel.connect import get_connection_file
    from jupyter_core.paths import jupyter_runtime_dir

    from .kernel_state import KernelStateFile, kernel_id_of

    try:
        kernel_id = kernel_id_of(get_connection_file())
    except RuntimeError:  # no kernel application: an embedded kernel
        return None
    if kernel_id is None:
        return None
    state_file = KernelStateFile(state_path(jupyter_runtime_dir(), kernel_id), kernel_id)
    state_file.loaded()
    return state_file


def _cell_name(shell: Any, filename: str) -> str | None:
    """``Cell In[5]`` for a cell's file, as IPython's tracebacks name it."""
    named = shell.compile.format_code_name(filename)
    return " ".join(named) if named else None


def _loaded_magics(shell: Any) -> GPUGuardMagics | None:
    registered = shell.magics_manager.registry.get(GPUGuardMagics.__name__)
    return registered if isinstance(registered, GPUGuardMagics) else None
