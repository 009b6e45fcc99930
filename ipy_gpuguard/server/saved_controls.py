"""A notebook saved through this server keeps no card buttons that die with their kernel.

Where the lab extension is off (or not installed), a card's buttons are widgets under it. A
widget view saved in a notebook names a model that lives only as long as its kernel: once that
kernel is gone (a restart, the notebook opened again tomorrow), JupyterLab and Notebook 7 show
"Error displaying widget: model not found" under the card, and nbconvert a blank. The buttons'
display carries the card's controls mark, so a save hook writes each as the view the kernel
puts in place of buttons that can no longer act, one JupyterLab hides: the card above keeps
every word, and what its retry printed.

Only the file changes: the page that saved it keeps its live buttons. A page that reloads the
notebook while its kernel still runs shows the card without them (``%gpuguard retry`` and the
card's words remain); the lab extension draws its own buttons from the card in every case.
Nothing else of the notebook is touched: the person's own widgets stay as they were.
"""

from __future__ import annotations

from typing import Any

from ..protocol import CONTROLS_MIME, HIDDEN_CONTROLS


def hide_saved_controls(model: dict[str, Any], **_: Any) -> None:
    """A pre-save hook of jupyter_server's contents manager: each output of a notebook that
    shows a card's buttons is saved hidden."""
    if model.get("type") != "notebook" or not isinstance(model.get("content"), dict):
        return
    for cell in model["content"].get("cells") or ():
        for output in (cell.get("outputs") or ()) if isinstance(cell, dict) else ():
            data = output.get("data") if isinstance(output, dict) else None
            if isinstance(data, dict) and CONTROLS_MIME in data:
                output["data"] = dict(HIDDEN_CONTROLS)


def register(contents_manager: Any) -> bool:
    """Hook ``hide_saved_controls`` into the server's saves; ``False`` where the contents
    manager takes no hook of an extension's (it is a custom one, or older than jupyter_server
    2's)."""
    hook = getattr(contents_manager, "register_pre_save_hook", None)
    if hook is None:
        return False
    hook(hide_saved_controls)
    return True
