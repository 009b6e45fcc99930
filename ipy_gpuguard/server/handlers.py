"""The server extension's endpoints under ``/ipy-gpuguard/api/v1/``: authenticated, read-only."""

from __future__ import annotations

import json
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from tornado import web

from ..protocol import kernel_state_of, state_path, to_json
from .meter import Meter
from .post_mortem import post_mortem

#: The resource the server's authorizer is asked about, for both endpoints (read only).
AUTH_RESOURCE = "ipy_gpuguard"


class DevicesHandler(APIHandler):
    """``GET devices``: every GPU and each running kernel's share (the meter's reading)."""

    auth_resource = AUTH_RESOURCE

    def initialize(self, meter: Meter) -> None:
        self._meter = meter

    @web.authenticated
    @authorized
    async def get(self) -> None:
        manager: Any = self.kernel_manager
        pids = {kernel_id: _pid(manager, kernel_id) for kernel_id in manager.list_kernel_ids()}
        reading = await self._meter.reading(pids)
        self.finish(json.dumps(to_json(reading)))


class KernelStateHandler(APIHandler):
    """``GET kernels/<id>/state``: what the kernel last recorded; 404 when it recorded nothing."""

    auth_resource = AUTH_RESOURCE

    def initialize(self, runtime_dir: str) -> None:
        self._runtime_dir = runtime_dir

    @web.authenticated
    @authorized
    def get(self, kernel_id: str) -> None:
        self.finish(json.dumps(self.recorded(kernel_id)))

    def recorded(self, kernel_id: str) -> dict[str, Any]:
        """The kernel's state record as JSON; an HTTP error that says why when there is none."""
        path = state_path(self._runtime_dir, kernel_id)
        try:
            state: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise web.HTTPError(404, f"kernel {kernel_id} has recorded no state") from None
        except (OSError, ValueError) as error:
            raise web.HTTPError(
                500, f"the state of kernel {kernel_id} cannot be read: {error}"
            ) from None
        return state


class PostMortemHandler(KernelStateHandler):
    """``GET kernels/<id>/post-mortem``: the kernel's last record and the likely cause of its
    death, for the notification the lab extension shows when a kernel dies."""

    @web.authenticated
    @authorized
    def get(self, kernel_id: str) -> None:
        try:
            state = kernel_state_of(self.recorded(kernel_id))
        except ValueError as error:
            raise web.HTTPError(500, f"the state of kernel {kernel_id}: {error}") from None
        self.finish(json.dumps(to_json(post_mortem(state))))


def _pid(manager: Any, kernel_id: str) -> int | None:
    """The kernel's process id, where its provisioner knows it (a local kernel)."""
    try:
        pid = manager.get_kernel(kernel_id).provisioner.pid
    except (AttributeError, KeyError):
        return None
    return pid if isinstance(pid, int) else None
