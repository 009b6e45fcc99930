"""The lab extension in the oldest JupyterLab it asks for (``^4.0.0``), in a real browser: the
meter in the status bar and a saved card rendered by the extension (issue 24 item 4)."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

from ipy_gpuguard.cards.build import base_card
from ipy_gpuguard.diagnosis import Context, diagnose
from ipy_gpuguard.ui.card_render import card_bundle

from ..browser.conftest import serve_lab
from ..browser.notebook import open_notebook
from ..chromium import chromium
from .venvs import OLDEST_LAB, venv

#: A stack's venv downloads and installs its framework first: minutes, not the usual limit.
pytestmark = [pytest.mark.stack, pytest.mark.timeout(1200)]

OOM = (
    "ResourceExhaustedError: OOM when allocating tensor with shape[256,1024,1024] and type "
    "float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc"
)


def test_the_lab_extension_works_in_the_oldest_jupyterlab_it_asks_for(project, tmp_path):
    interpreter = venv(OLDEST_LAB, project)
    # `jupyter labextension` runs the first jupyter-labextension on PATH: make it this venv's
    # (make puts the main venv's first, and it listed JupyterLab 4.6.6).
    path = f"{interpreter.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    listed = subprocess.run(
        [interpreter, "-m", "jupyter", "labextension", "list"],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": path},
    )
    plain = re.sub(r"\x1b\[[0-9;]*m", "", listed.stdout + listed.stderr)  # without its colours
    assert "JupyterLab v4.0.0" in plain
    assert "ipy-gpuguard v0.1.0 enabled OK" in plain

    card = base_card(diagnose(OOM, Context()), "card-1", (), (), None, 1)
    saved = new_notebook(
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        cells=[
            new_code_cell(
                "model.fit(x, y, batch_size=256)",
                outputs=[new_output("display_data", data=card_bundle(card))],
            )
        ],
    )
    with contextlib.ExitStack() as stack:
        lab = stack.enter_context(
            contextlib.contextmanager(serve_lab)(tmp_path, python=interpreter)
        )
        nbformat.write(saved, lab.notebooks / "saved.ipynb")
        page = stack.enter_context(chromium()).new_page()
        # Open it as the browser tests do, up to its kernel's idle: a server stopped while the
        # kernel still started waited for it, past 30 s under load.
        open_notebook(page, lab, "saved.ipynb")
        meter = page.locator(".jp-GpuGuard-meter")
        meter.wait_for(timeout=60_000)
        page.wait_for_function(
            "document.querySelector('.jp-GpuGuard-meter').textContent.includes('8.0 GiB')"
        )
        title = page.locator(".jp-GpuGuard-card .jp-GpuGuard-title")
        title.wait_for(timeout=60_000)
        assert title.inner_text() == card.title == "Out of GPU memory"
