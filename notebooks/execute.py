"""Execute notebooks headless, as a person would run them top to bottom, and keep the results.

``python notebooks/execute.py OUT_DIR NOTEBOOK...`` writes each executed notebook into OUT_DIR
and stops at the first cell that fails. ``make demo`` and the tests use it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def execute(notebook: Path, out_dir: Path, timeout_s: int = 600) -> Path:
    """Run every cell in a fresh kernel, in the notebook's folder; return the executed copy's path."""
    nb = nbformat.read(notebook, as_version=4)
    NotebookClient(
        nb,
        timeout=timeout_s,
        kernel_name="python3",
        resources={"metadata": {"path": str(notebook.parent)}},
    ).execute()
    out_dir.mkdir(parents=True, exist_ok=True)
    executed = out_dir / notebook.name
    nbformat.write(nb, executed)
    return executed


if __name__ == "__main__":
    out = Path(sys.argv[1])
    for name in sys.argv[2:]:
        print(f"executed {name} -> {execute(Path(name), out)}")
