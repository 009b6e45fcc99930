"""In a real kernel, as the lab extension talks to it: the handshake on the comm
``ipy_gpuguard.actions``, the card as data without a widget view, and an action answered with its
result while the card is updated by its display id."""

from __future__ import annotations

import uuid

import pytest

from ipy_gpuguard.protocol import CARD_MIME, SCHEMA_VERSION

from ..oom_cells import keras_fit_cliff
from ..protocol.validate import assert_valid
from .client import caused_by, collect, evaluate, execute, keras_kernel, kernel, widget_states

pytestmark = pytest.mark.kernel

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def open_comm(client, data):
    comm_id = uuid.uuid4().hex
    content = {"comm_id": comm_id, "target_name": "ipy_gpuguard.actions", "data": data}
    message = client.session.msg("comm_open", content)
    client.shell_channel.send(message)
    return comm_id, comm_messages(caused_by(client, message), comm_id)


def comm_messages(messages, comm_id):
    """What the kernel said on the comm ``comm_id``."""
    return [
        msg["content"]["data"]
        for msg in messages
        if msg["msg_type"] == "comm_msg" and msg["content"]["comm_id"] == comm_id
    ]


def load_and_take_the_comm(client):
    """Load the guard; the kernel opens the comm as it loads: its id, for the frontend's side."""
    loaded = execute(client, "%load_ext ipy_gpuguard")
    (opened,) = [
        m["content"] for m in loaded.of_type("comm_open")
        if m["content"]["target_name"] == "ipy_gpuguard.actions"
    ]  # fmt: skip
    return opened["comm_id"]


def send_on_comm(client, comm_id, data, timeout=240):
    message = client.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
    client.shell_channel.send(message)
    return caused_by(client, message, timeout)


def card_of(execution):
    (card,) = [
        msg for msg in execution.of_type("display_data") if CARD_MIME in msg["content"]["data"]
    ]
    return card["content"]


def test_a_frontend_that_renders_cards_gets_data_and_its_retry_goes_through_the_comm(tmp_path):
    with keras_kernel(tmp_path) as client:
        comm_id, hello = open_comm(client, {"renders": ["card"]})
        assert hello == [{"cards": [], "version": SCHEMA_VERSION}]  # no card can act yet
        failed = execute(client, "%%gpuguard\n" + keras_fit_cliff(256, 100), timeout=240)
        assert failed.status == "error"

        shown = card_of(failed)
        assert WIDGET_VIEW not in shown["data"]
        models = {state.get("_model_name") for state in widget_states(failed.iopub).values()}
        assert "ButtonModel" not in models  # the live panel is a widget; the card is not
        card = shown["data"][CARD_MIME]
        assert_valid("Card", card)
        assert shown["transient"]["display_id"] == card["id"]
        assert card["retry"]["offer"]["batch_size"] == 32
        (live,) = comm_messages(failed.iopub, comm_id)
        assert_valid("LiveCards", live)
        assert live["cards"] == [card["id"]]

        caused = send_on_comm(
            client,
            comm_id,
            {"action": "retry", "card": card["id"], "args": {"batch_size": 32}, "request": "r-1"},
        )

        (reply,) = [
            msg["content"]["data"]
            for msg in caused
            if msg["msg_type"] == "comm_msg" and msg["content"]["comm_id"] == comm_id
        ]
        assert_valid("ActionResult", reply)
        assert reply["ok"] is True
        assert reply["message"].startswith("Fixed: batch size 32 fits")
        assert reply["card"]["retry"]["verdict"]["state"] == "fixed"
        # Issue 21: matched to its request by id, and with the forms a saved notebook keeps.
        assert reply["request"] == "r-1"
        assert "Fixed: batch size 32 fits" in reply["html"]
        assert "Fixed: batch size 32 fits" in reply["text"]
        updates = [
            msg
            for msg in caused
            if msg["msg_type"] == "update_display_data" and CARD_MIME in msg["content"]["data"]
        ]
        assert updates
        assert {msg["content"]["transient"]["display_id"] for msg in updates} == {card["id"]}
        final = updates[-1]["content"]["data"][CARD_MIME]
        assert_valid("Card", final)
        assert final["batch_edit"]["batch_size"] == 32
        assert evaluate(client, "BATCH_SIZE") == "32"
        assert evaluate(client, "history.params['steps']") == "32"  # 1024 samples / 32

        bad = send_on_comm(client, comm_id, {"action": "explode", "card": card["id"]})
        (refused,) = [m["content"]["data"] for m in bad if m["msg_type"] == "comm_msg"]
        assert refused["ok"] is False
        assert refused["message"].startswith("unknown action 'explode'")


STALLING = """%%gpuguard --timeout 1 --interval 0.25
import time, ipy_gpuguard
ipy_gpuguard.heartbeat()
time.sleep(60)"""


def test_a_stall_is_shown_as_a_card_while_the_cell_still_runs(tmp_path):
    """The lab extension's Interrupt button needs the stall as a card while the cell runs."""
    with kernel(GPUGUARD_SIMULATE="8GiB", JUPYTER_DATA_DIR=str(tmp_path)) as client:
        comm_id = load_and_take_the_comm(client)
        answer = send_on_comm(client, comm_id, {"renders": ["card"]})
        assert comm_messages(answer, comm_id) == [{"cards": [], "version": SCHEMA_VERSION}]
        msg_id = client.execute(STALLING)
        while True:
            msg = client.get_iopub_msg(timeout=30)
            if msg["msg_type"] == "display_data" and CARD_MIME in msg["content"]["data"]:
                break
        assert msg["parent_header"]["msg_id"] == msg_id  # in the running cell's output
        card = msg["content"]["data"][CARD_MIME]
        assert_valid("Card", card)
        assert (card["kind"], card["rule_id"]) == ("hang", "hang.watchdog.stalled")
        assert card["title"].startswith("No progress for")
        assert any("time.sleep(60)" in line for line in card["evidence"])  # where it waits

        client.manager.interrupt_kernel()  # what the card's Interrupt does, through the server
        stopped = collect(client, msg_id, timeout=60)
        assert stopped.status == "error"
        assert stopped.reply["content"]["ename"] == "KeyboardInterrupt"


def test_the_comm_refuses_what_the_schema_forbids_in_a_short_sentence(tmp_path):
    """Issue 22 item 14: an extra field and a batch size of 10**30 were taken (the cell reran),
    and the refusal of a 10 MB payload echoed all 10 MB back."""
    with kernel(GPUGUARD_SIMULATE="8GiB", JUPYTER_DATA_DIR=str(tmp_path)) as client:
        comm_id = load_and_take_the_comm(client)
        sent = [
            {"action": "retry", "card": "c1", "extra": 1},
            {"action": "retry", "card": "c1", "args": {"batch_size": 10**30}},
            {"action": "retry", "card": "c" * 10_000_000},
        ]
        answers = [comm_messages(send_on_comm(client, comm_id, data), comm_id) for data in sent]
        messages = [answer["message"] for (answer,) in answers]
        assert all(not answer["ok"] for (answer,) in answers)
        assert messages[0] == "an action has action, card, args and request, not 'extra'"
        assert messages[1].startswith("retry: batch_size is a whole number from 1 to 2147483647")
        assert messages[2].startswith("retry: 'card' is the id of the card to act on, not 'ccc")
        assert max(map(len, messages)) < 200
