"""A real JupyterLab on loopback, isolated from the developer's own settings, and Debian's
Chromium driven by Playwright.

Lab runs as a subprocess: pytest-jupyter's event-loop fixtures and Playwright's sync API do not
share a loop. Its kernels see a simulated 8 GiB GPU and TensorFlow's BFC allocator on the CPU,
whose statistics stand in for a GPU allocator's (what the card's "memory did not come back"
reads).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..chromium import chromium

#: What the kernels are given: a simulated 8 GiB GPU, and TensorFlow's allocator on the CPU.
KERNEL_ENV = {
    "GPUGUARD_SIMULATE": "8GiB",
    "TF_ENABLE_ONEDNN_OPTS": "0",
    "TF_CPP_MIN_LOG_LEVEL": "2",
    "TF_CPU_ALLOCATOR_USE_BFC": "true",
}

#: Where each step's screenshot goes (look at them).
SCREENSHOTS = Path(__file__).resolve().parents[2] / "build" / "browser"


@dataclass
class Lab:
    url: str
    token: str
    notebooks: Path
    runtime_dir: Path

    def page_url(self, notebook: str) -> str:
        """The notebook in a workspace of its own, started afresh: pages opened one after
        another must not restore each other's tabs."""
        workspace = notebook.removesuffix(".ipynb")
        return f"{self.url}lab/workspaces/{workspace}/tree/{notebook}?reset&token={self.token}"

    def api(self, path: str, method: str = "GET") -> object:
        request = urllib.request.Request(
            f"{self.url}{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from serve_lab(tmp_path_factory.mktemp("lab"))


@pytest.fixture(scope="session")
def lab_without_extension(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """JupyterLab with ipy-gpuguard's lab extension disabled, as VS Code or Colab render a
    notebook: widgets and HTML, no card renderer."""
    yield from serve_lab(tmp_path_factory.mktemp("lab-without"), disabled=("ipy-gpuguard",))


@dataclass
class Gateway:
    """A Jupyter Kernel Gateway: where JupyterLab's kernels run when it is given one."""

    url: str
    token: str
    runtime_dir: Path


def serve_gateway(root: Path, env: dict[str, str]) -> Iterator[Gateway]:
    """A real Jupyter Kernel Gateway on a free loopback port, with a runtime folder of its own:
    its kernels' connection and state files are not where the server looks. ``env`` is for its
    kernels alone (the server is not given it)."""
    runtime, data = root / "runtime", root / "data"
    runtime.mkdir()
    data.mkdir()
    token, port = secrets.token_hex(16), _free_port()
    inherited = [*env, "JUPYTER_RUNTIME_DIR", "JUPYTER_DATA_DIR", "PATH", "HOME"]
    log = (root / "gateway.log").open("w")
    process = subprocess.Popen(
        [
            sys.executable, "-m", "jupyter", "kernelgateway",
            "--KernelGatewayApp.ip=127.0.0.1", f"--KernelGatewayApp.port={port}",
            f"--KernelGatewayApp.auth_token={token}",
            "--JupyterWebsocketPersonality.list_kernels=True",  # the server lists its kernels
            # A gateway's kernels inherit only the variables it names.
            *(f"--KernelGatewayApp.env_process_whitelist={name}" for name in inherited),
        ],
        env={
            **os.environ, **env, "JUPYTER_RUNTIME_DIR": str(runtime), "JUPYTER_DATA_DIR": str(data)
        },
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    gateway = Gateway(f"http://127.0.0.1:{port}", token, runtime)
    try:
        _wait_until(
            lambda: _get(f"{gateway.url}/api/kernelspecs", token),
            process,
            root / "gateway.log",
            "the Kernel Gateway",
        )
        yield gateway
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def _get(url: str, token: str) -> object:
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def _wait_until(
    answers: Callable[[], object], process: subprocess.Popen, log: Path, what: str
) -> None:
    """Until ``answers`` does without an ``OSError``; an error with the log if the process
    ends or a minute passes first."""
    deadline = time.monotonic() + 60
    while True:
        try:
            answers()
            return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not start:\n{log.read_text()}") from None
            time.sleep(0.3)


def serve_lab(
    root: Path,
    disabled: tuple[str, ...] = (),
    python: Path = Path(sys.executable),
    gateway: Gateway | None = None,
) -> Iterator[Lab]:
    """JupyterLab of ``python``'s environment (this one by default) on a free port; its kernels
    run behind ``gateway`` where one is given, and then the server has no simulated GPU."""
    dirs = {name: root / name for name in ("config", "data", "runtime", "settings", "workspaces")}
    for folder in dirs.values():
        folder.mkdir()
    notebooks = root / "notebooks"
    notebooks.mkdir()
    news = dirs["settings"] / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    (dirs["config"] / "labconfig").mkdir()
    (dirs["config"] / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": dict.fromkeys(disabled, True)})
    )
    token = secrets.token_hex(16)
    port = _free_port()
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(dirs["config"]),
        # The venv's data dir still holds the lab extensions; the user's does not.
        "JUPYTER_DATA_DIR": str(dirs["data"]),
        "JUPYTER_RUNTIME_DIR": str(dirs["runtime"]),
        "JUPYTERLAB_SETTINGS_DIR": str(dirs["settings"]),
        "JUPYTERLAB_WORKSPACES_DIR": str(dirs["workspaces"]),
        **KERNEL_ENV,
    }
    through = []
    if gateway is not None:
        del env["GPUGUARD_SIMULATE"]
        through = [
            f"--GatewayClient.url={gateway.url}",
            f"--GatewayClient.auth_token={gateway.token}",
        ]
    log = (root / "lab.log").open("w")
    process = subprocess.Popen(
        [
            str(python), "-m", "jupyterlab",
            "--no-browser", "--allow-root", "--ip=127.0.0.1", f"--port={port}",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={notebooks}",
            "--LabApp.expose_app_in_browser=True",
            *through,
        ],
        env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    running = Lab(f"http://127.0.0.1:{port}/", token, notebooks, dirs["runtime"])
    try:
        _wait_until(lambda: running.api("api/status"), process, root / "lab.log", "JupyterLab")
        yield running
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Chromium for one module (see :func:`tests.chromium.chromium`)."""
    with chromium() as launched:
        yield launched


def shoot(page: object, name: str) -> Path:
    """Save the page (or one element of it, a Playwright locator) as ``build/browser/<name>.png``."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path))  # type: ignore[attr-defined]
    return path


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """A browser test that failed leaves its page as it was (``failed-<test>.png``) and the
    text of its cards in the report: a wait that timed out under load says what it saw."""
    outcome = yield
    report = outcome.get_result()
    funcargs = getattr(item, "funcargs", {})
    page = funcargs.get("fresh_page") or funcargs.get("page")
    if report.when != "call" or not report.failed or page is None:
        return
    try:
        shoot(page, f"failed-{item.name}")
        cards = page.locator(".jp-GpuGuard-card").all_inner_texts()
    except Exception as error:  # the page itself may be what broke
        report.sections.append(("page at failure", f"unreadable: {error}"))
        return
    text = "\n----\n".join(cards) or "no card on the page"
    report.sections.append(("cards at failure", text))
