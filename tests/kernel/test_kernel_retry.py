"""In a real kernel: the out-of-memory card's "Retry with batch size N" button, clicked as a
frontend clicks it (a ``comm_msg``), reruns the cell with that size inside the card."""

from __future__ import annotations

import pytest

from ipy_gpuguard.protocol import CARD_MIME

from ..oom_cells import keras_fit_cliff
from .client import click, evaluate, execute, keras_kernel, widget_states

pytestmark = pytest.mark.kernel


def state_updates(messages, comm_id):
    return [
        msg["content"]["data"]["state"]
        for msg in messages
        if msg["msg_type"] == "comm_msg"
        and msg["content"]["comm_id"] == comm_id
        and msg["content"]["data"].get("method") == "update"
    ]


def test_the_retry_button_reruns_the_cell_with_a_smaller_batch_and_reports_success(tmp_path):
    with keras_kernel(tmp_path) as client:
        failed = execute(client, "%%gpuguard\n" + keras_fit_cliff(256, 100), timeout=240)
        assert failed.status == "error"
        assert failed.reply["content"]["ename"] == "ResourceExhaustedError"

        widgets = widget_states(failed.iopub)
        (retry_id,) = [
            comm_id
            for comm_id, state in widgets.items()
            if state.get("description", "").startswith("Retry with batch size")
        ]
        assert widgets[retry_id]["description"] == "Retry with batch size 32"
        (card,) = [
            msg["content"]
            for msg in failed.of_type("display_data")
            if CARD_MIME in msg["content"]["data"]
        ]
        assert "A retry reruns the whole cell" in card["data"]["text/html"]
        (output_id,) = [
            comm_id
            for comm_id, state in widgets.items()
            if state.get("_model_name") == "OutputModel"
        ]

        caused = click(client, retry_id, timeout=240)

        # The card itself says what came of it: its display, updated by its id.
        updates = [
            msg["content"]["data"]
            for msg in caused
            if msg["msg_type"] == "update_display_data"
            and msg["content"]["transient"]["display_id"] == card["transient"]["display_id"]
        ]
        assert "Fixed: batch size 32 fits" in updates[-1]["text/html"]
        assert (
            "line 15: BATCH_SIZE = 256  # the cell&#x27;s batch size → BATCH_SIZE = 32"
            in updates[-1]["text/html"]
        )
        # The attempt's output went into the card's Output widget: its msg_id was the click's.
        click_id = caused[0]["parent_header"]["msg_id"]
        assert {"msg_id": click_id} in state_updates(caused, output_id)
        assert any(msg["msg_type"] == "display_data" for msg in caused)  # the attempt's panel
        # ... as its frozen summary only: no live panel to be saved as "running" (issue 14, 21)
        assert not [msg for msg in caused if msg["msg_type"] == "comm_open"]
        assert evaluate(client, "BATCH_SIZE") == "32"
        assert evaluate(client, "history.params['steps']") == "32"  # 1024 samples / 32


def test_after_gpuguard_retry_the_cards_retry_button_says_why_it_cannot_act(tmp_path):
    """Issue 14, 18 and 19: the button did nothing when clicked, and its label was cut."""
    with keras_kernel(tmp_path) as client:
        failed = execute(client, "%%gpuguard\n" + keras_fit_cliff(256, 100), timeout=240)
        fixed = execute(client, "%gpuguard retry", timeout=240)
        assert fixed.status == "ok"
        assert "ipy_gpuguard · Fixed: batch size 32 fits" in fixed.stdout()

        widgets = widget_states(failed.iopub + fixed.iopub)
        buttons = {
            state["description"]: (comm_id, state)
            for comm_id, state in widgets.items()
            if state.get("_model_name") == "ButtonModel"
        }
        retry_id, retry = next(
            value for label, value in buttons.items() if label.startswith("Retry")
        )
        assert retry["disabled"] is True
        assert retry["tooltip"] == "batch size 32 fits: nothing smaller to try"
        layouts = {state["layout"].removeprefix("IPY_MODEL_") for _, state in buttons.values()}
        assert {widgets[layout]["width"] for layout in layouts} == {"auto"}  # never cut

        caused = click(client, retry_id)  # a frontend that sends it anyway
        said = [
            msg["content"]["data"]["state"]["value"]
            for msg in caused
            if msg["msg_type"] == "comm_msg" and "value" in msg["content"]["data"].get("state", {})
        ]
        assert any("nothing smaller to try" in value for value in said)


def test_the_card_keeps_what_the_retry_printed_once_its_output_widget_is_gone(tmp_path):
    """Issue 35, item 13: without the lab extension, a retry printed only into the Output
    widget under the buttons, which the frontend fills and the kernel never holds; after a
    restart and a reload the run that fixed the cell had left nothing. The card keeps a copy."""
    printing = (
        keras_fit_cliff(256, 100)
        + 'import sys\nprint(f"step 1/{BATCH_SIZE}", end="\\r")\n'
        + 'print(f"\\x1b[1mtrained at {BATCH_SIZE}\\x1b[0m")\n'
        + 'print("<i>a warning</i>", file=sys.stderr)\n'
    )
    with keras_kernel(tmp_path) as client:
        failed = execute(client, "%%gpuguard\n" + printing, timeout=240)
        widgets = widget_states(failed.iopub)
        (retry_id,) = [
            comm_id
            for comm_id, state in widgets.items()
            if state.get("description", "").startswith("Retry with batch size")
        ]
        (card,) = [
            msg["content"]
            for msg in failed.of_type("display_data")
            if CARD_MIME in msg["content"]["data"]
        ]

        caused = click(client, retry_id, timeout=240)

        # The attempt printed as it prints anywhere: to the frontend, unchanged.
        printed = "".join(
            msg["content"]["text"]
            for msg in caused
            if msg["msg_type"] == "stream" and msg["content"]["name"] == "stdout"
        )
        assert "step 1/32\r\x1b[1mtrained at 32\x1b[0m\n" in printed
        updates = [
            msg["content"]
            for msg in caused
            if msg["msg_type"] == "update_display_data"
            and msg["content"]["transient"]["display_id"] == card["transient"]["display_id"]
        ]
        last = updates[-1]
        assert "Fixed: batch size 32 fits" in last["data"]["text/html"]
        html = last["data"]["text/html"].split('<details class="ipy-gpuguard-output">')[1]
        assert html.startswith("<summary>Output (2 lines)</summary>")
        assert "trained at 32" in html
        assert "step 1/32" not in html
        assert "\x1b" not in html
        assert "&lt;i&gt;a warning&lt;/i&gt;" in html
        assert last["data"]["text/plain"].endswith(
            "Output (2 lines):\ntrained at 32\n<i>a warning</i>\n"
        )
        kept = last["metadata"][CARD_MIME]["action_output"]
        assert kept == [
            {"output_type": "stream", "name": "stdout", "text": "\x1b[1mtrained at 32\x1b[0m\n"},
            {"output_type": "stream", "name": "stderr", "text": "<i>a warning</i>\n"},
        ]
        # ipykernel's streams are as they were: the next cell's prints are not kept.
        assert evaluate(client, "type(sys.stdout.echo).__module__") != repr(
            "ipy_gpuguard.shell.stream_record"
        )
