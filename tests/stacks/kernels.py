"""A real kernel of a stack's own Python, and what its cells showed."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

from ..kernel.client import Execution, execute
from .venvs import Stack


@contextmanager
def stack_kernel(stack: Stack, interpreter: Path, data_dir: Path) -> Iterator[Any]:
    """A kernel of the stack's Python, on a simulated 8 GiB GPU, the extension loaded."""
    kernels = stack.folder / "kernels"
    spec = kernels / stack.name / "kernel.json"
    spec.parent.mkdir(parents=True, exist_ok=True)
    argv = [str(interpreter), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec.write_text(json.dumps({"argv": argv, "display_name": stack.name, "language": "python"}))
    environment = {
        **{name: value for name, value in os.environ.items() if name != "PYTHONPATH"},
        "GPUGUARD_SIMULATE": "8GiB",
        "TF_ENABLE_ONEDNN_OPTS": "0",
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "JUPYTER_DATA_DIR": str(data_dir),
        **stack.environment,
    }
    manager = KernelManager(
        kernel_name=stack.name, kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernels)])
    )
    manager.start_kernel(env=environment, cwd=str(data_dir))  # not the checkout: the wheel
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=120)
        loaded = execute(client, "%load_ext ipy_gpuguard")
        assert loaded.status == "ok", text_of(loaded)
        yield client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def text_of(execution: Execution) -> str:
    """Everything the cell showed, as text: streams, displays and widget states."""
    parts = []
    for message in execution.iopub:
        content = message["content"]
        parts.append(content.get("text", ""))
        parts += [str(value) for value in content.get("data", {}).values()]
        parts += content.get("traceback", [])
    return "\n".join(parts)
