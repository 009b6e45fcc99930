"""The page JupyterLab serves leaves the kernel's subshell requests out of its status (issue 35,
item 12): their ``idle`` no longer says Idle while a cell that shows widgets still runs."""

from __future__ import annotations

import json
import re

import pytest

from ipy_gpuguard.server.kernel_status import SUBSHELL_MESSAGE_TYPES


@pytest.fixture
def jp_server_config():
    return {"ServerApp": {"jpserver_extensions": {"ipy_gpuguard": True, "jupyterlab": True}}}


@pytest.mark.lab
async def test_the_lab_page_leaves_subshell_requests_out_of_the_kernels_status(jp_fetch):
    response = await jp_fetch("lab", method="GET")
    page = response.body.decode()
    found = re.search(
        r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', page, re.S
    )
    assert found is not None
    untracked = json.loads(found.group(1))["untracked_message_types"]
    assert set(SUBSHELL_MESSAGE_TYPES) <= set(untracked)
    assert "debug_request" in untracked  # jupyter_server's own are kept


async def test_the_servers_activity_tracking_leaves_them_out_too(jp_serverapp):
    manager = jp_serverapp.kernel_manager
    assert not any(manager.track_message_type(kind) for kind in SUBSHELL_MESSAGE_TYPES)
    assert manager.track_message_type("execute_request")
