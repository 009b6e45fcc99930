"""In a real kernel: the hang card streams in while the stuck cell still runs, and the person's
own interrupt (the stop button) passes through as IPython shows it, with no hang card."""

from __future__ import annotations

import time

import pytest

from ipy_gpuguard.protocol import CARD_MIME, LIVE_PANEL_METADATA

from ..watch_cells import GENERATOR
from .client import collect, evaluate, execute, kernel
from .test_kernel_panel import GUARD_THREADS

pytestmark = pytest.mark.kernel


@pytest.fixture(scope="module")
def client():
    with kernel(GPUGUARD_SIMULATE="8GiB", TF_ENABLE_ONEDNN_OPTS="0") as client:
        assert execute(client, "%load_ext ipy_gpuguard").status == "ok"
        assert execute(client, GENERATOR, timeout=180).status == "ok"
        yield client


def hang_card_updates(execution):
    """The live panel's drawings that showed the hang card, in order."""
    return [
        msg
        for msg in execution.of_type("update_display_data")
        if LIVE_PANEL_METADATA in msg["content"]["metadata"]
        and "No progress for" in msg["content"]["data"]["text/html"]
    ]


def summary_of(execution):
    """The panel's summary: the drawing with no live mark that ended it."""
    (summary,) = [
        msg
        for msg in execution.of_type("update_display_data")
        if LIVE_PANEL_METADATA not in msg["content"]["metadata"]
    ]
    return summary


def test_the_hang_card_fills_while_the_cell_runs_and_the_interrupt_ends_it(client):
    run = execute(
        client,
        "%%gpuguard --timeout 2 --on-hang interrupt --interval 0.25\n"
        "model.fit(batches(block_after=3), steps_per_epoch=50, epochs=1, verbose=0)",
        timeout=180,
    )

    assert run.status == "error"
    (error,) = run.of_type("error")
    updates = hang_card_updates(run)
    assert updates, "the hang card was never filled"
    first = updates[0]
    assert "in batches: time.sleep(0.05)" in first["content"]["data"]["text/html"]
    assert first["header"]["date"] < error["header"]["date"]  # while the cell still ran
    cards = [m for m in run.of_type("display_data") if CARD_MIME in m["content"]["data"]]
    (card,) = cards
    assert card["content"]["data"][CARD_MIME]["rule_id"] == "hang.watchdog.interrupted"
    assert evaluate(client, GUARD_THREADS) == "[]"


def test_the_persons_own_interrupt_is_ipythons_keyboard_interrupt_and_no_card(client):
    msg_id = client.execute(
        "%%gpuguard --timeout 2\n"
        "model.fit(batches(step_s=0.05), steps_per_epoch=400, epochs=1, verbose=0)"
    )
    time.sleep(4)  # the fit has started and steps
    client.manager.interrupt_kernel()
    run = collect(client, msg_id, timeout=120)

    assert run.status == "error"
    assert run.reply["content"]["ename"] == "KeyboardInterrupt"
    (error,) = run.of_type("error")
    assert error["content"]["ename"] == "KeyboardInterrupt"
    assert not hang_card_updates(run)
    assert not [m for m in run.of_type("display_data") if CARD_MIME in m["content"]["data"]]
    frozen = summary_of(run)
    assert "No progress" not in frozen["content"]["data"]["text/plain"]
    assert evaluate(client, GUARD_THREADS) == "[]"


def test_a_cell_that_ended_is_not_a_hang_while_its_traceback_is_shown(client):
    """Issue 22 item 19: under load, the person's interrupt ended a fit of 0.05 s steps and the
    hang card filled while IPython formatted Keras' traceback, seconds without a step. Here the
    traceback is slow to show by itself: 2.5 s against ``--timeout 1``."""
    library = (  # a library's exception: its rendering is not the cell's code
        "class SlowToShow(Exception):\n"
        "    def _render_traceback_(self):\n"
        "        time.sleep(2.5)\n"
        "        return ['SlowToShow: shown after 2.5 s']\n"
    )
    defined = execute(client, f"exec(compile({library!r}, 'slow_library.py', 'exec'))")
    assert defined.status == "ok"
    run = execute(
        client,
        "%%gpuguard --timeout 1 --interval 0.1\n"
        "model.fit(batches(step_s=0.05), steps_per_epoch=10, epochs=1, verbose=0)\n"
        "raise SlowToShow()\n",
        timeout=120,
    )
    assert run.status == "error"
    (error,) = run.of_type("error")
    assert error["content"]["traceback"] == ["SlowToShow: shown after 2.5 s"]
    assert not hang_card_updates(run)
    frozen = summary_of(run)
    assert "No progress" not in frozen["content"]["data"]["text/plain"]


def test_an_interrupt_that_cannot_land_is_said_and_the_restart_offered(client):
    """Issue 35 item 14: with ``fit`` waiting on a generator stuck on tf.data's thread, the
    stop button changed nothing visible; 30 s later the card still said "Press the stop
    button". Here the generator comes back after 9 s, and the interrupt lands then."""
    msg_id = client.execute(
        "%%gpuguard --timeout 2 --interval 0.25\n"
        "model.fit(batches(block_after=3, block_s=9), steps_per_epoch=50, epochs=1, verbose=0)"
    )
    time.sleep(4)  # stalled since about 2 s
    client.manager.interrupt_kernel()
    run = collect(client, msg_id, timeout=120)

    assert run.reply["content"]["ename"] == "KeyboardInterrupt"  # it landed once it could
    (error,) = run.of_type("error")
    said = [
        msg
        for msg in hang_card_updates(run)
        if "has not landed" in msg["content"]["data"]["text/html"]
    ]
    assert said, "the card never said the interrupt had not landed"
    text = said[0]["content"]["data"]["text/html"]
    assert "The interrupt was sent" in text
    assert "waits inside the framework for the thread that runs your code" in text
    assert "Restart the kernel" in text
    assert "Press the stop button" not in text
    assert said[0]["header"]["date"] < error["header"]["date"]
    assert evaluate(client, GUARD_THREADS) == "[]"
    assert evaluate(client, "__import__('signal').set_wakeup_fd(-1)") == "-1"  # given back
