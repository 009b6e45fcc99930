"""The jupyter_server extension: the GPU meter's reading and the kernels' recorded state, for
the lab extension, under authenticated, versioned, read-only endpoints; a kernel status that
stays busy while a cell shows widgets (:mod:`.kernel_status`); and saved notebooks that keep no
card buttons which die with their kernel (:mod:`.saved_controls`).

It is an :class:`~jupyter_server.extension.application.ExtensionApp` for the one thing a plain
extension module cannot have in jupyter_server 2: a hook when the server stops, where NVML is
shut down with the extension that opened it.
"""

from __future__ import annotations

import asyncio

from jupyter_server.extension.application import ExtensionApp

from .handlers import DevicesHandler, KernelStateHandler, PostMortemHandler
from .kernel_status import untrack_subshell_messages
from .meter import Meter
from .saved_controls import register

__all__ = ["GPUGuardServer", "Meter"]

#: Where the endpoints live, under the server's base URL.
API_PATH = "ipy-gpuguard/api/v1"


class GPUGuardServer(ExtensionApp):
    """The endpoints; NVML is opened on the first request, in a worker thread, and shut down
    when the server stops."""

    name = "ipy_gpuguard"
    load_other_extensions = True

    def initialize_settings(self) -> None:
        self.meter = Meter(runtime_dir=self._runtime_dir)
        self.settings["ipy_gpuguard_meter"] = self.meter
        untrack_subshell_messages(self.serverapp)
        assert self.serverapp is not None  # linked before the settings are made
        if not register(self.serverapp.contents_manager):
            self.log.warning(
                "ipy_gpuguard: this contents manager takes no save hook; a card's buttons saved "
                "in a notebook show 'model not found' once their kernel is gone"
            )

    def initialize_handlers(self) -> None:
        runtime = {"runtime_dir": self._runtime_dir}
        self.handlers.extend(
            [
                (f"/{API_PATH}/devices", DevicesHandler, {"meter": self.meter}),
                (rf"/{API_PATH}/kernels/(?P<kernel_id>[\w-]+)/state", KernelStateHandler, runtime),
                (
                    rf"/{API_PATH}/kernels/(?P<kernel_id>[\w-]+)/post-mortem",
                    PostMortemHandler,
                    runtime,
                ),
            ]
        )
        self.log.info("ipy_gpuguard: GPU meter, kernel state and post-mortems at /%s/", API_PATH)

    @property
    def _runtime_dir(self) -> str:
        """Jupyter's runtime folder, where the kernels record their state."""
        assert self.serverapp is not None  # linked before the settings and handlers are made
        return str(self.serverapp.runtime_dir)

    async def stop_extension(self) -> None:
        """Shut NVML down (in a worker thread: a busy driver can block the call)."""
        await asyncio.to_thread(self.meter.close)
