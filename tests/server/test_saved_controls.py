"""A notebook saved through a real jupyter_server keeps no card buttons that die with their
kernel (issue 35, item 13: after a restart and a reload, "Error displaying widget: model not
found" sat under the card in JupyterLab without the lab extension)."""

from __future__ import annotations

import json

import nbformat

from ipy_gpuguard.protocol import CARD_MIME, CONTROLS_MIME, HIDDEN_CONTROLS

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def view(model_id: str) -> dict:
    return {"version_major": 2, "version_minor": 0, "model_id": model_id}


def notebook() -> nbformat.NotebookNode:
    card = nbformat.v4.new_output(
        "display_data",
        {"text/plain": "ipy_gpuguard · Out of GPU memory", CARD_MIME: {"id": "c1"}},
    )
    controls = nbformat.v4.new_output(
        "display_data",
        {WIDGET_VIEW: view("0a1b"), CONTROLS_MIME: {"card": "c1"}, "text/plain": ""},
    )
    persons = nbformat.v4.new_output("display_data", {WIDGET_VIEW: view("9f8e"), "text/plain": "x"})
    cells = [
        nbformat.v4.new_code_cell("%%gpuguard\nfit()", outputs=[card, controls]),
        nbformat.v4.new_code_cell("display(slider)", outputs=[persons]),
        nbformat.v4.new_markdown_cell("notes"),
    ]
    return nbformat.v4.new_notebook(cells=cells)


async def test_a_saved_notebook_keeps_the_card_and_hides_its_buttons(jp_fetch, jp_root_dir):
    sent = notebook()
    body = json.dumps({"type": "notebook", "format": "json", "content": sent})
    await jp_fetch("api", "contents", "trained.ipynb", method="PUT", body=body)

    saved = nbformat.read(jp_root_dir / "trained.ipynb", as_version=4)
    card, controls = saved.cells[0].outputs
    assert card.data == sent.cells[0].outputs[0].data  # every word of the card
    assert controls.data == HIDDEN_CONTROLS  # hidden by JupyterLab, blank in nbconvert
    assert saved.cells[1].outputs[0].data == sent.cells[1].outputs[0].data  # the person's own
    assert saved.cells[2].source == "notes"


async def test_a_file_that_is_no_notebook_is_saved_as_sent(jp_fetch, jp_root_dir):
    text = json.dumps({"data": {CONTROLS_MIME: {}}})
    body = json.dumps({"type": "file", "format": "text", "content": text})
    await jp_fetch("api", "contents", "outputs.json", method="PUT", body=body)
    assert (jp_root_dir / "outputs.json").read_text() == text
