"""The guard follows the kernel (issue 38): JupyterLab whose kernels run behind a real Jupyter
Kernel Gateway, with a runtime folder of its own, the simulated GPU given to the gateway's
kernels only. The status bar shows the kernel's GPU while a guarded cell runs, from the kernel's
own report on its channels; a kill of the kernel's process gets the post-mortem naming the cell
and its last step, from the last state the kernel reported."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import KERNEL_ENV, Gateway, Lab, serve_gateway, serve_lab, shoot
from .notebook import kernel_id, open_notebook, run_cell, start_cell, write_notebook

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

#: A guarded custom loop of a minute, ten steps a second.
TRAINING = (
    "%%gpuguard --interval 0.25\n"
    "import time, ipy_gpuguard\n"
    "for step in range(600):\n"
    "    time.sleep(0.1)\n"
    "    ipy_gpuguard.heartbeat()"
)
METER = "(document.querySelector('.jp-GpuGuard-meter')?.textContent ?? '')"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    yield from serve_gateway(tmp_path_factory.mktemp("gateway"), KERNEL_ENV)


@pytest.fixture(scope="module")
def lab_behind_gateway(tmp_path_factory: pytest.TempPathFactory, gateway: Gateway) -> Iterator[Lab]:
    yield from serve_lab(tmp_path_factory.mktemp("lab-gateway"), gateway=gateway)


def recorded(path: Path, steps: int, timeout: float = 60) -> dict:
    """The kernel's state file on the gateway's side, once it records ``steps`` steps."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            state = json.loads(path.read_text())
            if state["step"] >= steps:
                return state
        except (OSError, ValueError):
            pass  # not written yet
        assert time.monotonic() < deadline, f"no state with {steps} steps in {path}"
        time.sleep(0.2)


def test_a_kernel_behind_a_gateway_shows_its_gpu_and_its_death_names_the_cell(
    browser, gateway, lab_behind_gateway
):
    lab = lab_behind_gateway
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    try:
        name = write_notebook(lab, "remote.ipynb", ["%load_ext ipy_gpuguard", TRAINING])
        open_notebook(page, lab, name)
        page.wait_for_function(f"{METER}.includes('no GPU')")  # the server's machine has none
        run_cell(page, 0)
        start_cell(page, 1)
        host = socket.gethostname()
        page.wait_for_function(f"{METER}.includes('(simulated) on {host}')", timeout=60_000)
        shoot(page, "gateway-1-meter")
        assert "8.0 GiB" in page.evaluate(METER)
        assert page.evaluate(METER).count("GPU") == 1  # one GPU, counted once

        kernel = kernel_id(page)
        assert not (lab.runtime_dir / "ipy_gpuguard" / f"kernel-{kernel}.json").exists()
        state = recorded(gateway.runtime_dir / "ipy_gpuguard" / f"kernel-{kernel}.json", 20)
        os.kill(state["pid"], signal.SIGKILL)

        toast = page.locator(".Toastify__toast", has_text="Kernel died while running cell")
        try:
            toast.wait_for(timeout=60_000)
        finally:
            shoot(page, "gateway-2-died")
        assert "import time, ipy_gpuguard" in toast.inner_text()  # the cell's first line
        page.wait_for_function(f"{METER}.includes('no GPU')")  # what it said died with it
        restarting = page.locator(".jp-Dialog", has_text="Kernel Restarting")
        if restarting.count():
            restarting.locator(".jp-mod-accept").click()  # Lab's own dialog covers the page
            restarting.wait_for(state="detached")
        page.locator(".Toastify__toast button", has_text="Details").click()
        dialog = page.locator(".jp-Dialog")
        dialog.wait_for()
        details = dialog.inner_text()
        shoot(page, "gateway-3-post-mortem")
        steps = int(re.search(r"Progress\s+(\d+) steps", details).group(1))
        assert steps >= 20  # its last step, as the kernel last reported it
        assert "Simulated GPU" in details
    finally:
        page.context.close()
