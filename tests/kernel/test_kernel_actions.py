"""In a real kernel, as the lab extension talks to it: the handshake on the comm
``ipy_gpuguard.actions``, the card as data without a widget view, and an action answered with its
result while the card is updated by its display id."""

from __future__ import annotations

import uuid

import pytest

from ipy_gpuguard.protocol import CARD_MIME

from ..oom_cells import keras_fit_cliff
from ..protocol.validate import assert_valid
from .client import caused_by, evaluate, execute, keras_kernel, widget_states

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
        assert hello == [{"cards": [], "version": 2}]  # no card can act yet
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
            client, comm_id, {"action": "retry", "card": card["id"], "args": {"batch_size": 32}}
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
