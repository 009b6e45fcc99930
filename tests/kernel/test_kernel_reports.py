"""The kernel reports itself on its channels (issue 38), in a real kernel, as the lab extension
asks: its state record pushed while a guarded cell runs (the kernel busy), answered when asked,
and never sent to a frontend that did not ask."""

from __future__ import annotations

import socket

import pytest

from ipy_gpuguard.protocol import SCHEMA_VERSION

from ..protocol.validate import assert_valid
from .client import execute, kernel
from .test_kernel_actions import comm_messages, open_comm, send_on_comm

pytestmark = pytest.mark.kernel

#: A custom loop of 3 s that beats the guard's heartbeat: three state writes at least.
STEPPING = """%%gpuguard --interval 0.1
import time, ipy_gpuguard
for step in range(30):
    time.sleep(0.1)
    ipy_gpuguard.heartbeat()
"""


def reports(messages, comm_id):
    return [data for data in comm_messages(messages, comm_id) if "state" in data]


def test_a_frontend_that_asked_gets_the_kernels_state_while_it_is_busy_and_when_it_asks(
    tmp_path,
):
    connection_file = tmp_path / "kernel-7e7e7e7e-test.json"  # named as servers name them
    env = {"GPUGUARD_SIMULATE": "8GiB", "JUPYTER_RUNTIME_DIR": str(tmp_path)}
    with kernel(str(connection_file), **env) as client:
        assert execute(client, "%load_ext ipy_gpuguard").status == "ok"
        asked, hello = open_comm(client, {"renders": ["card"], "reports": ["state"]})
        silent, _ = open_comm(client, {"renders": ["card"]})
        (first,) = [data for data in hello if "state" in data]
        assert_valid("StateReport", first)
        assert first["version"] == SCHEMA_VERSION
        assert first["state"]["host"] == socket.gethostname()
        assert first["state"]["running"] is False

        run = execute(client, STEPPING, timeout=120)
        assert run.status == "ok", run.error()
        replied = run.reply["header"]["date"]
        pushed = [
            msg
            for msg in run.of_type("comm_msg")
            if msg["content"]["comm_id"] == asked and "state" in msg["content"]["data"]
        ]
        while_busy = [msg["content"]["data"] for msg in pushed if msg["header"]["date"] < replied]
        running = [report["state"] for report in while_busy if report["state"]["running"]]
        assert len(running) >= 2, while_busy  # pushed while the cell ran, at most once a second
        assert all(s["cell"]["first_line"] == "import time, ipy_gpuguard" for s in running)
        sampled = [state for state in running if state["devices"]]  # the first is the start's
        assert sampled
        assert max(state["step"] for state in sampled) > 0
        for state in sampled:
            (device,) = state["devices"]
            assert device["simulated"]
            assert device["total_bytes"] == 8 << 30
        (ended,) = [r["state"] for r in reports(run.iopub, asked) if not r["state"]["running"]]
        assert ended["outcome"] == "ok"
        assert ended["step"] == 30
        assert reports(run.iopub, silent) == []  # it did not ask

        answer = reports(send_on_comm(client, asked, {"ask": "state"}), asked)
        assert [report["state"] for report in answer] == [ended]
