"""The server extension's endpoints under ``/ipy-gpuguard/api/v1/``: authenticated; none writes."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import replace
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from tornado import web

from ..protocol import KernelState, decode_state, read_state, state_path, to_json
from ..protocol.state import MAX_STATE_BYTES
from .meter import Meter
from .post_mortem import post_mortem

#: The resource the server's authorizer is asked about, for both endpoints (read only).
AUTH_RESOURCE = "ipy_gpuguard"
#: A kernel id as this server's kernels have them (a UUID), with room for other managers'.
KERNEL_ID = re.compile(r"[\w-]{1,64}")


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
        local = tuple(sorted(kernel_id for kernel_id, pid in pids.items() if pid is not None))
        self.finish(json.dumps(to_json(replace(reading, local_kernels=local)), allow_nan=False))


class KernelStateHandler(APIHandler):
    """``GET kernels/<id>/state``: what the kernel last recorded; 404 when it recorded nothing."""

    auth_resource = AUTH_RESOURCE

    def initialize(self, runtime_dir: str) -> None:
        self._runtime_dir = runtime_dir

    @web.authenticated
    @authorized
    async def get(self, kernel_id: str) -> None:
        state = await self.recorded(kernel_id)
        self.finish(json.dumps(to_json(state), allow_nan=False))

    async def recorded(self, kernel_id: str) -> KernelState:
        """The kernel's state record, read off the event loop (a slow disk, or a file that is not
        one, holds up no other request); an HTTP error in a short sentence when there is none."""
        _check_kernel_id(kernel_id)
        try:
            state = await asyncio.to_thread(read_state, state_path(self._runtime_dir, kernel_id))
        except ValueError as error:
            raise web.HTTPError(500, f"kernel {kernel_id}: {error}") from None
        if state is None:
            raise web.HTTPError(404, f"kernel {kernel_id} has recorded no state")
        return state


class PostMortemHandler(KernelStateHandler):
    """``GET kernels/<id>/post-mortem``: the kernel's last record and the likely cause of its
    death, for the notification the lab extension shows when a kernel dies.

    ``POST`` with a state record as its body: the same for a kernel whose record is not in this
    server's runtime folder (a kernel on another machine, behind a gateway), from the last record
    the kernel itself reported to the frontend. Nothing is written; the record is decoded as
    strictly as a state file is.
    """

    @web.authenticated
    @authorized
    async def get(self, kernel_id: str) -> None:
        state = await self.recorded(kernel_id)
        self.finish(json.dumps(to_json(post_mortem(state)), allow_nan=False))

    @web.authenticated
    @authorized
    async def post(self, kernel_id: str) -> None:
        _check_kernel_id(kernel_id)
        body = self.request.body
        if len(body) > MAX_STATE_BYTES:
            raise web.HTTPError(413, "a state record is a few kB")
        try:
            state = decode_state(body)
        except ValueError as error:
            raise web.HTTPError(400, f"kernel {kernel_id}: {error}") from None
        if state.kernel_id not in (None, kernel_id):
            raise web.HTTPError(400, f"the record is kernel {state.kernel_id}'s, not {kernel_id}'s")
        self.finish(json.dumps(to_json(post_mortem(state)), allow_nan=False))


def _check_kernel_id(kernel_id: str) -> None:
    if not KERNEL_ID.fullmatch(kernel_id):
        raise web.HTTPError(400, "not a kernel id: letters, digits, - and _, at most 64")


def _pid(manager: Any, kernel_id: str) -> int | None:
    """The kernel's process id, where its provisioner knows it (a local kernel)."""
    try:
        pid = manager.get_kernel(kernel_id).provisioner.pid
    except (AttributeError, KeyError):
        return None
    return pid if isinstance(pid, int) else None
