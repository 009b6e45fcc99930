"""JupyterLab without ipy-gpuguard's lab extension, as VS Code and Colab render a notebook:
the card is its HTML with widget buttons under it, and it lasts through a restart and a reload
(it was one widget display, which became "Error displaying widget: model not found")."""

from __future__ import annotations

import re

import pytest

from .conftest import shoot
from .notebook import (
    CURRENT,
    FAILING_CELL,
    RAW,
    VERBOSE_CELL,
    cell,
    cell_index,
    copy_notebook,
    open_notebook,
    run_cell,
    save_notebook,
    setup_cells,
    slow_browser,
    start_cell,
    wait_for_kernel,
    write_notebook,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

CARD = ".ipy-gpuguard-card"


def save_restart_and_reload(page) -> None:
    """Save the notebook, restart its kernel, and open the page again from the saved file."""
    save_notebook(page)
    page.evaluate(f"{CURRENT}.sessionContext.session.kernel.restart()")
    wait_for_kernel(page, "idle")
    page.reload()
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)


def assert_no_widget_error(page, index: int) -> None:
    """Once the widget manager has looked for the models of the cell's saved widget views, none
    of them says "Error displaying widget: model not found"."""
    wait_for_kernel(page, "idle")
    outputs = cell(page, index).locator(".jp-OutputArea")
    page.wait_for_function(
        "cell => !cell.innerText.includes('Loading widget')",
        arg=outputs.element_handle(),
        timeout=30_000,
    )
    assert "model not found" not in outputs.inner_text()


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

    save_restart_and_reload(page)
    card = cell(page, failing).locator(CARD)
    card.wait_for(timeout=60_000)
    assert "Fixed: batch size 64 fits" in card.inner_text()
    # Nothing of the buttons is left under it (issue 35, item 13: "Error displaying widget:
    # model not found" sat there): the server saved them hidden.
    assert_no_widget_error(page, failing)
    card.scroll_into_view_if_needed()
    shoot(page, "no-extension-2-restarted-and-reloaded")
    page.context.close()


def test_the_retrys_output_stays_in_the_card_through_a_restart_and_reload(
    browser, lab_without_extension
):
    """Issue 35, item 13: the retry printed only into the Output widget under the buttons,
    which dies with the kernel: after a restart and a reload, the run that fixed the cell had
    left neither its epochs nor its metrics."""
    lab = lab_without_extension
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    name = write_notebook(lab, "verbose.ipynb", [*setup_cells(), VERBOSE_CELL])
    open_notebook(page, lab, name)
    for index in range(3):
        run_cell(page, index)
    training = cell(page, 2)
    training.locator(".jupyter-widgets.widget-button", has_text="Retry with batch size 64").click()
    training.locator(CARD, has_text="Fixed: batch size 64 fits").wait_for(timeout=180_000)
    wait_for_kernel(page, "idle")
    kept = training.locator("details.ipy-gpuguard-output")
    assert not kept.evaluate("fold => fold.open")  # the widget above it shows the same, live
    assert "Epoch 2/2" in kept.text_content()
    assert re.search(r"64/64.*loss: [\d.]+", kept.text_content())
    assert not RAW.search(kept.text_content()), repr(kept.text_content())

    save_restart_and_reload(page)
    kept = cell(page, 2).locator("details.ipy-gpuguard-output")
    kept.wait_for(state="attached", timeout=60_000)
    kept.evaluate("fold => { fold.open = true; }")
    assert "Epoch 2/2" in kept.inner_text()
    assert re.search(r"64/64.*loss: [\d.]+", kept.inner_text())
    assert_no_widget_error(page, 2)
    kept.scroll_into_view_if_needed()
    shoot(page, "no-extension-3-retry-output-kept")
    page.context.close()


#: A guarded cell that stops making progress: the live panel shows the hang within seconds.
STUCK = (
    "%%gpuguard --timeout 1 --interval 0.25\n"
    "import time, ipy_gpuguard\n"
    "ipy_gpuguard.heartbeat()\n"
    "time.sleep(120)  # a data loader that never answers"
)


def test_a_live_panel_saved_while_its_cell_hung_is_its_last_drawing_after_a_restart(
    browser, lab_without_extension
):
    """Issue 35, item 13: the live panel was widgets, saved as views of models that lived in
    the kernel: a notebook saved while its cell hung showed "Error displaying widget: model
    not found" in the panel's place once the kernel was restarted and the page reloaded."""
    lab = lab_without_extension
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    name = write_notebook(lab, "hung.ipynb", ["%load_ext ipy_gpuguard", STUCK])
    open_notebook(page, lab, name)
    run_cell(page, 0)
    start_cell(page, 1)
    panel = cell(page, 1).locator(".ipy-gpuguard-panel", has_text="No progress for")
    panel.wait_for(timeout=60_000)
    with slow_browser(page):  # saved as Lab's autosave does while the cell hangs, on a busy machine
        save_notebook(page)
    save_restart_and_reload(page)
    wait_for_kernel(page, "idle")
    outputs = cell(page, 1).locator(".jp-OutputArea")
    outputs.locator(".ipy-gpuguard-panel").wait_for(timeout=60_000)
    text = outputs.inner_text()
    assert "No progress for" in text  # as it was last drawn
    assert "model not found" not in text
    assert "Loading widget" not in text
    shoot(page, "no-extension-4-hung-panel-restarted-and-reloaded")
    page.context.close()
