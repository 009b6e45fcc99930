"""The lab extension in a real JupyterLab and Chromium, on the demo notebook with a simulated
GPU: the meter, the card rendered by the extension, retry and apply (and undo), the saved card
without its kernel, restart-and-run-to-here, and the post-mortem of a kernel that died.

The steps share one page, in order, as a person goes through them; each saves a screenshot
under ``build/browser/``.
"""

from __future__ import annotations

import re

import pytest

from .conftest import shoot
from .notebook import (
    cell,
    cell_index,
    copy_notebook,
    editor_text,
    execution_counts,
    kernel_id,
    open_notebook,
    run_cell,
    wait_for_kernel,
    write_notebook,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

FAILING_CELL = "942564db"  # BATCH_SIZE = 512 in notebooks/oom_recovery.ipynb
CARD = ".jp-GpuGuard-card"


@pytest.fixture(scope="module")
def page(browser, lab):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    copy_notebook(lab, "oom_recovery.ipynb")
    open_notebook(page, lab, "oom_recovery.ipynb")
    yield page
    context.close()


def test_1_the_meter_shows_the_simulated_gpu_and_this_kernels_share(page):
    for index in range(1, cell_index(page, FAILING_CELL) + 1):
        run_cell(page, index)  # the guarded cell records the kernel's share of the device
    meter = page.locator(".jp-GpuGuard-meter")
    meter.wait_for()
    page.wait_for_function(
        "document.querySelector('.jp-GpuGuard-meter').textContent.includes('this kernel')"
    )
    text = meter.inner_text()
    assert re.search(r"GPU\s*[\d.]+ \w+ / 8\.0 GiB \(simulated\)", text), text
    assert re.search(r"this kernel: [\d.]+ \w+", text), text
    assert page.locator(".jp-GpuGuard-bar-fill").count() == 1

    meter.click()
    panel = page.locator(".jp-GpuGuard-meterPanel")
    panel.wait_for()
    assert "Simulated GPU (8.00 GiB)" in panel.inner_text()
    assert re.search(r"oom_recovery\.ipynb\s+[\d.]+ \wiB", panel.inner_text())  # by notebook
    shoot(page, "1-meter")
    page.keyboard.press("Escape")


def test_2_the_failing_cell_shows_the_card_rendered_by_the_extension(page):
    failing = cell_index(page, FAILING_CELL)
    card = cell(page, failing).locator(CARD)
    card.wait_for()
    assert card.locator(".jp-GpuGuard-title").inner_text() == "Out of CPU memory"
    assert cell(page, failing).locator(".jupyter-widgets.widget-button").count() == 0
    assert card.locator("svg.jp-GpuGuard-chart polyline").count() == 2
    assert "time since the cell started" in card.inner_text()
    retry = card.locator("button[data-action=retry]")
    retry.wait_for()
    page.wait_for_function(
        "document.querySelector('.jp-GpuGuard-card button[data-action=retry]')?.disabled === false"
    )
    assert retry.inner_text() == "Retry with batch size 64"
    shoot(page, "2-card")


def test_3_retry_fixes_the_cell_and_apply_writes_the_size_into_it_undoably(page):
    failing = cell_index(page, FAILING_CELL)
    card = cell(page, failing).locator(CARD)
    card.locator("button[data-action=retry]").click()
    status = card.locator(".jp-GpuGuard-status")
    status.filter(has_text="Fixed: batch size 64 fits").wait_for(timeout=180_000)
    assert "Fixed: batch size 64 fits" in card.locator(".jp-GpuGuard-verdict").inner_text()
    assert card.locator(".jp-GpuGuard-attempts tr").count() == 2  # header and one attempt
    assert "BATCH_SIZE = 512" in editor_text(page, failing)

    card.locator("button[data-action=apply_to_cell]").click()
    card.locator(".jp-GpuGuard-status", has_text="now in the cell").wait_for()
    assert "BATCH_SIZE = 64" in editor_text(page, failing)
    shoot(page, "3-applied")

    cell(page, failing).locator(".cm-content").click()
    page.keyboard.press("Control+z")
    page.wait_for_function(
        """i => document.querySelectorAll('.jp-Notebook .jp-Cell')[i]
            .querySelector('.cm-content').innerText.includes('BATCH_SIZE = 512')""",
        arg=failing,
    )
    assert "BATCH_SIZE = 64" not in editor_text(page, failing)


def test_4_saved_and_reloaded_without_its_kernel_the_card_still_applies(page, lab):
    failing = cell_index(page, FAILING_CELL)
    page.evaluate("window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function("!window.jupyterapp.shell.currentWidget.context.model.dirty")
    old_kernel = kernel_id(page)
    page.evaluate("window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
    page.wait_for_function(
        "!window.jupyterapp.shell.currentWidget.sessionContext.session"
    )
    page.reload()
    page.wait_for_selector(CARD, timeout=60_000)
    wait_for_kernel(page, "idle")
    assert kernel_id(page) != old_kernel

    card = cell(page, failing).locator(CARD)
    assert "Fixed: batch size 64 fits" in card.inner_text()
    retry = card.locator("button[data-action=find_max]")
    shoot(page, "4-reloaded-before")
    page.wait_for_function(
        "document.querySelector('.jp-GpuGuard-card button[data-action=find_max]')"
        ".title.includes('kernel session has ended')"
    )
    assert retry.is_disabled()
    assert "kernel session has ended" in card.inner_text()
    apply = card.locator("button[data-action=apply_to_cell]")
    assert apply.is_enabled()
    apply.click()
    card.locator(".jp-GpuGuard-status", has_text="now in the cell").wait_for()
    assert "BATCH_SIZE = 64" in editor_text(page, failing)
    shoot(page, "4-reloaded")
