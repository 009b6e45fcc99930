"""The other Pythons the project supports (3.10, 3.12, 3.13), each in a venv of its own: the
unit suites pass, and a guarded cell's failure gives its card in a real kernel."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from ipy_gpuguard.protocol import CARD_MIME

from ..kernel.client import execute
from .kernels import stack_kernel, text_of
from .venvs import PYTHONS, ROOT, venv

#: A stack's venv downloads and installs its framework first: minutes, not the usual limit.
pytestmark = [pytest.mark.stack, pytest.mark.timeout(1200)]

#: The unit suites: each room's tests, but those that need a kernel, a browser, a GPU, a
#: framework or JupyterLab (the integration tests at the top of tests/ run on the main Python).
#: These venvs have no JupyterLab: their server extension tests run on a bare jupyter_server.
UNIT_SUITES = (
    "cards", "diagnosis", "doctor", "protocol", "retry", "server", "shell", "telemetry", "ui",
    "watchdog", "test_house.py",
)  # fmt: skip
UNIT_MARKERS = (
    "not kernel and not browser and not gpu and not torch and not stack and not tensorflow"
    " and not lab"
)
#: A test module that imports a framework as it loads is left out whole.
_IMPORTS_A_FRAMEWORK = re.compile(r"^(?:import|from) (?:tensorflow|keras|jax)\b", re.MULTILINE)


def framework_modules() -> list[str]:
    return sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "tests").rglob("test_*.py")
        if _IMPORTS_A_FRAMEWORK.search(path.read_text())
    )


@pytest.mark.parametrize("stack", PYTHONS, ids=[stack.name for stack in PYTHONS])
def test_the_unit_suites_pass(stack, project):
    interpreter = venv(stack, project)
    ignored = [f"--ignore={module}" for module in framework_modules()]
    environment = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    suites = [f"tests/{suite}" for suite in UNIT_SUITES]
    pytest_run = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", UNIT_MARKERS]
    done = subprocess.run(
        [interpreter, *pytest_run, *ignored, *suites],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-2000:]
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
    passed = re.search(r"(\d+) passed", summary)
    assert passed is not None
    assert int(passed.group(1)) > 1000, summary


@pytest.mark.parametrize("stack", PYTHONS, ids=[stack.name for stack in PYTHONS])
def test_a_failed_guarded_cell_gets_its_card_in_a_real_kernel(stack, project, tmp_path):
    interpreter = venv(stack, project)
    with stack_kernel(stack, interpreter, tmp_path) as client:
        failed = execute(
            client,
            "%%gpuguard\nraise RuntimeError('CUDA out of memory. Tried to allocate 2.00 GiB')",
        )
        assert failed.status == "error"
        cards = [
            msg["content"]["data"][CARD_MIME]
            for msg in failed.of_type("display_data")
            if CARD_MIME in msg["content"]["data"]
        ]
        assert [card["title"] for card in cards] == ["Out of GPU memory (PyTorch)"], text_of(failed)
