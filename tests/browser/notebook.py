"""Driving a notebook in JupyterLab as a person does, through ``window.jupyterapp`` where the
page has no control for it (which kernel, its state)."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import nbformat

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
#: The cell of notebooks/oom_recovery.ipynb that runs out of memory (BATCH_SIZE = 512).
FAILING_CELL = "942564db"
CURRENT = "window.jupyterapp.shell.currentWidget"


def copy_notebook(lab: Any, name: str) -> str:
    shutil.copy(NOTEBOOKS / name, lab.notebooks / name)
    return name


def write_notebook(lab: Any, name: str, sources: list[str]) -> str:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nbformat.write(notebook, lab.notebooks / name)
    return name


def open_notebook(page: Any, lab: Any, name: str) -> None:
    page.goto(lab.page_url(name))
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    wait_for_kernel(page, "idle")


def wait_for_kernel(page: Any, status: str, timeout: float = 120_000) -> None:
    page.wait_for_function(
        f"{CURRENT}?.sessionContext?.session?.kernel?.status === {json.dumps(status)}",
        timeout=timeout,
    )


def save_notebook(page: Any) -> None:
    """Save the open notebook; returns once Lab has written the file.

    Awaits Lab's own save, never the notebook reading clean: while a guarded cell runs, its live
    panel redraws up to four times a second, each redraw makes the notebook dirty again, and it
    read clean for 20 to 230 ms after a save (measured). A browser on a busy machine polled past
    that moment and waited 30 s for a clean notebook that never came.
    """
    page.evaluate(f"{CURRENT}.context.save()")


@contextmanager
def slow_browser(page: Any, rate: float = 50) -> Iterator[None]:
    """The page's CPU slowed ``rate`` times, as on a machine whose cores are all busy."""
    devtools = page.context.new_cdp_session(page)
    devtools.send("Emulation.setCPUThrottlingRate", {"rate": rate})
    try:
        yield
    finally:
        devtools.send("Emulation.setCPUThrottlingRate", {"rate": 1})
        devtools.detach()


def cell(page: Any, index: int) -> Any:
    return page.locator(".jp-Notebook .jp-Cell").nth(index)


def cell_index(page: Any, cell_id: str) -> int:
    return int(
        page.evaluate(f"id => {CURRENT}.content.widgets.findIndex(c => c.model.id === id)", cell_id)
    )


def start_cell(page: Any, index: int) -> None:
    """Select cell ``index`` and start it, without waiting for it to end."""
    _run(page, index, wait=False)


def run_cell(page: Any, index: int, timeout: float = 180_000) -> None:
    """Select cell ``index`` and run it; returns once it has run."""
    _run(page, index, wait=True)
    wait_for_kernel(page, "idle", timeout)


def _run(page: Any, index: int, wait: bool) -> None:
    page.evaluate(
        """([i, wait]) => {
            const notebook = window.jupyterapp.shell.currentWidget.content;
            notebook.activeCellIndex = i;
            notebook.deselectAll();
            const ran = window.jupyterapp.commands.execute('notebook:run-cell');
            return wait ? ran : null;
        }""",
        [index, wait],
    )


def editor_text(page: Any, index: int) -> str:
    """The cell's source as its editor shows it."""
    return str(cell(page, index).locator(".cm-content").inner_text())


def execution_counts(page: Any) -> list[int | None]:
    return list(
        page.evaluate(f"{CURRENT}.content.widgets.map(c => c.model.executionCount ?? null)")
    )


def kernel_id(page: Any) -> str:
    return str(page.evaluate(f"{CURRENT}.sessionContext.session.kernel.id"))


def setup_cells() -> list[str]:
    """The demo notebook's first code cells: the guard on a simulated GPU, and the model."""
    notebook = nbformat.read(NOTEBOOKS / "oom_recovery.ipynb", as_version=4)
    code = [c.source for c in notebook.cells if c.cell_type == "code"]
    return code[:2]


#: A training cell that prints Keras' progress bar, and pauses 5 s before its second epoch.
VERBOSE_CELL = """%%gpuguard
import time
BATCH_SIZE = 512
model = build_model()
pause = keras.callbacks.LambdaCallback(on_epoch_begin=lambda epoch, logs: epoch and time.sleep(5))
history = model.fit(x, y, batch_size=BATCH_SIZE, epochs=2, callbacks=[pause])"""

#: What a raw terminal stream holds and a notebook output never shows.
RAW = re.compile(r"[\x1b\b\r]|\[[0-9;]*m")
