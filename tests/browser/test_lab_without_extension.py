"""JupyterLab without ipy-gpuguard's lab extension, as VS Code and Colab render a notebook:
the card is its HTML with widget buttons under it, and it lasts through a restart and a reload
(it was one widget display, which became "Error displaying widget: model not found")."""

from __future__ import annotations

import pytest

from .conftest import shoot
from .notebook import (
    CURRENT,
    FAILING_CELL,
    cell,
    cell_index,
    copy_notebook,
    open_notebook,
    run_cell,
    wait_for_kernel,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

CARD = ".ipy-gpuguard-card"


def test_the_cards_html_acts_with_widgets_and_survives_a_restart_and_reload(
    browser, lab_without_extension
):
    lab = lab_without_extension
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    copy_notebook(lab, "oom_recovery.ipynb")
    open_notebook(page, lab, "oom_recovery.ipynb")
    failing = cell_index(page, FAILING_CELL)
    for index in range(1, failing + 1):
        run_cell(page, index)

    card = cell(page, failing).locator(CARD)
    card.wait_for()
    assert "Retry: batch size 64 instead of 512" in card.inner_text()
    assert page.locator(".jp-GpuGuard-card").count() == 0  # the extension's renderer is off
    retry = cell(page, failing).locator(
        ".jupyter-widgets.widget-button", has_text="Retry with batch size 64"
    )
    retry.click()
    fixed = cell(page, failing).locator(CARD, has_text="Fixed: batch size 64 fits")
    fixed.wait_for(timeout=180_000)
    wait_for_kernel(page, "idle")
    fixed.scroll_into_view_if_needed()
    shoot(page, "no-extension-1-fixed")

    page.evaluate(f"{CURRENT}.context.save()")
    page.wait_for_function(f"!{CURRENT}.context.model.dirty")
    page.evaluate(f"{CURRENT}.sessionContext.session.kernel.restart()")
    wait_for_kernel(page, "idle")
    page.reload()
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    card = cell(page, failing).locator(CARD)
    card.wait_for(timeout=60_000)
    assert "Fixed: batch size 64 fits" in card.inner_text()
    assert "model not found" not in card.inner_text()
    card.scroll_into_view_if_needed()
    shoot(page, "no-extension-2-restarted-and-reloaded")
    page.context.close()
