"""Every notebook in notebooks/ runs top to bottom, so the demos cannot rot."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))
sys.path.insert(0, str(NOTEBOOKS[0].parent))
from execute import execute  # noqa: E402

pytestmark = pytest.mark.kernel


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_notebook_runs_and_shows_the_frozen_summary(notebook, tmp_path):
    executed = nbformat.read(execute(notebook, tmp_path), as_version=4)
    outputs = [
        output for cell in executed.cells if cell.cell_type == "code" for output in cell.outputs
    ]
    assert not [output for output in outputs if output.output_type == "error"]
    summaries = [
        output.data["text/html"]
        for output in outputs
        if "data" in output and "ipy-gpuguard-summary" in output.data.get("text/html", "")
    ]
    assert summaries, "no guarded cell left its summary in the saved notebook"
