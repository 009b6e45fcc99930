"""Execute notebooks headless, as a person would run them top to bottom, and keep the results.

``python notebooks/execute.py OUT_DIR NOTEBOOK...`` writes each executed notebook into OUT_DIR
and stops at the first cell that fails. ``make demo`` and the tests use it. The kernels keep
what the guard remembers (batch sizes that fitted, incidents) in ``OUT_DIR/jupyter-data``, not
in the person's own Jupyter data folder: a demo must not change what their notebooks retry.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def execute(notebook: Path, out_dir: Path, timeout_s: int = 600) -> Path:
    """Run every cell in a fresh kernel, in the notebook's folder; return the executed copy's path."""
    nb = nbformat.read(notebook, as_version=4)
    data_dir = out_dir / "jupyter-data"
    NotebookClient(
        nb,
        timeout=timeout_s,
        kernel_name="python3",
        resources={"metadata": {"path": str(notebook.parent)}},
    ).execute(env={**os.environ, "JUPYTER_DATA_DIR": str(data_dir.resolve())})
    out_dir.mkdir(parents=True, exist_ok=True)
    executed = out_dir / notebook.name
    nbformat.write(nb, executed)
    return executed


if __name__ == "__main__":
    out = Path(sys.argv[1])
    for name in sys.argv[2:]:
        print(f"executed {name} -> {execute(Path(name), out)}")
