"""Drive a real IPython kernel through jupyter_client, as a notebook frontend does."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from jupyter_client.manager import KernelManager, start_new_kernel

from ipy_gpuguard.protocol import LIVE_PANEL_METADATA


@dataclass
class Execution:
    reply: dict[str, Any]
    iopub: list[dict[str, Any]]

    @property
    def status(self) -> str:
        return self.reply["content"]["status"]

    def error(self) -> str:
        """The kernel's error, for an assertion's message: its name, value and traceback."""
        content = self.reply["content"]
        if content["status"] == "ok":
            return ""
        return "\n".join(
            [f"{content.get('ename')}: {content.get('evalue')}", *content.get("traceback", [])]
        )

    def of_type(self, msg_type: str) -> list[dict[str, Any]]:
        return [msg for msg in self.iopub if msg["msg_type"] == msg_type]

    def panel_redraws_before_reply(self) -> int:
        """The live panel's redraws (updates of its display) that came while the cell ran."""
        replied: datetime = self.reply["header"]["date"]
        return sum(
            1
            for msg in self.of_type("update_display_data")
            if LIVE_PANEL_METADATA in msg["content"]["metadata"] and msg["header"]["date"] < replied
        )

    def stdout(self) -> str:
        return "".join(
            msg["content"]["text"]
            for msg in self.of_type("stream")
            if msg["content"]["name"] == "stdout"
        )


@contextmanager
def kernel(
    connection_file: str | None = None, log: Path | None = None, **env: str
) -> Iterator[Any]:
    """A kernel with ``env``; ``connection_file`` names its connection file as Jupyter's server
    does (``kernel-<id>.json``), which is where the kernel reads its id from; ``log``, a file
    the kernel's stderr (ipykernel's own log) is written to."""
    with contextlib.ExitStack() as stack:
        stderr = None if log is None else stack.enter_context(log.open("ab"))
        with _started(connection_file, stderr, {**os.environ, **env}) as client:
            yield client


@contextmanager
def _started(connection_file: str | None, stderr: Any, env: dict[str, str]) -> Iterator[Any]:
    if connection_file is None:
        manager, client = start_new_kernel(kernel_name="python3", env=env, stderr=stderr)
    else:
        manager = KernelManager(kernel_name="python3", connection_file=connection_file)
        manager.start_kernel(env=env, stderr=stderr)
        client = manager.client()
        client.start_channels()
        client.wait_for_ready(timeout=60)
    client.manager = manager  # for interrupts, as the stop button sends them
    try:
        yield client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


@contextmanager
def keras_kernel(data_dir: Path, log: Path | None = None, **env: str) -> Iterator[Any]:
    """A kernel for real Keras out-of-memory cells on a simulated GPU, the extension loaded."""
    settings = {
        "GPUGUARD_SIMULATE": "8GiB",
        "TF_ENABLE_ONEDNN_OPTS": "0",
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "JUPYTER_DATA_DIR": str(data_dir),
    }
    with kernel(log=log, **{**settings, **env}) as client:
        assert execute(client, "%load_ext ipy_gpuguard").status == "ok"
        yield client


def execute(client: Any, code: str, timeout: float = 120) -> Execution:
    """Run ``code`` and collect every iopub message until the kernel is idle again."""
    return collect(client, client.execute(code), timeout)


def collect(client: Any, msg_id: str, timeout: float = 120) -> Execution:
    """Every iopub message of the request ``msg_id`` until the kernel is idle, and its reply."""
    iopub = []
    while True:
        msg = client.get_iopub_msg(timeout=timeout)
        iopub.append(msg)
        if (
            msg["msg_type"] == "status"
            and msg["content"]["execution_state"] == "idle"
            and msg["parent_header"].get("msg_id") == msg_id
        ):
            break
    while True:
        reply = client.get_shell_msg(timeout=timeout)
        if reply["parent_header"].get("msg_id") == msg_id:
            return Execution(reply, iopub)


def evaluate(client: Any, expression: str) -> str:
    """The repr of an expression evaluated in the kernel, through ``user_expressions``."""
    msg_id = client.execute("", silent=True, user_expressions={"value": expression})
    while True:
        reply = client.get_shell_msg(timeout=60)
        if reply["parent_header"].get("msg_id") == msg_id:
            result = reply["content"]["user_expressions"]["value"]
            assert result["status"] == "ok", result
            return result["data"]["text/plain"]


def click(client: Any, comm_id: str, timeout: float = 60) -> list[dict[str, Any]]:
    """Click a widget button as the frontend does: a ``comm_msg`` on the shell channel.

    Returns the iopub messages the click caused, up to the kernel's idle status.
    """
    content = {"comm_id": comm_id, "data": {"method": "custom", "content": {"event": "click"}}}
    message = client.session.msg("comm_msg", content)
    client.shell_channel.send(message)
    return caused_by(client, message, timeout)


def caused_by(client: Any, message: dict[str, Any], timeout: float = 60) -> list[dict[str, Any]]:
    """The iopub messages a message sent on the shell channel caused, up to the idle status."""
    caused = []
    while True:
        msg = client.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != message["header"]["msg_id"]:
            continue
        caused.append(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return caused


def widget_states(messages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each widget's state as the frontend has it: opened, then updated."""
    states: dict[str, dict[str, Any]] = {}
    for msg in messages:
        content = msg["content"]
        if msg["msg_type"] == "comm_open" and content["target_name"] == "jupyter.widget":
            states[content["comm_id"]] = dict(content["data"]["state"])
        elif msg["msg_type"] == "comm_msg" and content["comm_id"] in states:
            states[content["comm_id"]].update(content["data"].get("state", {}))
    return states
