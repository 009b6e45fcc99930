"""The guard inside a real Jupyter kernel: what a notebook frontend receives."""

from __future__ import annotations

import pytest

from ipy_gpuguard.protocol import LIVE_PANEL_METADATA

from .client import evaluate, execute, kernel

pytestmark = pytest.mark.kernel

GUARD_THREADS = (
    "[t.name for t in __import__('threading').enumerate() if t.name.startswith('ipy_gpuguard')]"
)
#: The widgets alive in the kernel (``None`` while ipywidgets was never imported).
LIVE_WIDGETS = (
    "__import__('sys').modules.get('ipywidgets') and len(__import__('ipywidgets').Widget.widgets)"
)
RSS_MIB = "__import__('psutil').Process().memory_info().rss // 2**20"


@pytest.fixture(scope="module")
def client():
    with kernel(GPUGUARD_SIMULATE="8GiB") as client:
        assert execute(client, "%load_ext ipy_gpuguard").status == "ok"
        yield client


def test_panel_redraws_stream_while_the_cell_runs(client):
    run = execute(client, "%%gpuguard\nimport time\nblock = bytearray(64 * 2**20)\ntime.sleep(3)")
    assert run.status == "ok"
    assert run.panel_redraws_before_reply() >= 4
    (shown,) = run.of_type("display_data")
    panel_id = shown["content"]["transient"]["display_id"]
    # Issue 35, item 13: HTML, never a widget: a saved panel is its last drawing.
    assert set(shown["content"]["data"]) == {"text/plain", "text/html"}
    assert "ipy-gpuguard-panel" in shown["content"]["data"]["text/html"]
    assert LIVE_PANEL_METADATA in shown["content"]["metadata"]
    updates = run.of_type("update_display_data")
    assert {msg["content"]["transient"]["display_id"] for msg in updates} == {panel_id}
    frozen = updates[-1]["content"]
    assert "ipy_gpuguard · finished" in frozen["data"]["text/plain"]
    assert "peak" in frozen["data"]["text/html"]
    assert LIVE_PANEL_METADATA not in frozen["metadata"]  # the summary is no live panel
    assert not run.of_type("comm_open")
    assert evaluate(client, GUARD_THREADS) == "[]"


def test_a_failing_guarded_cell_is_an_error_reply_with_one_traceback(client):
    run = execute(client, "%%gpuguard\nx = 1\nraise ValueError('from the cell')")
    assert run.status == "error"
    assert run.reply["content"]["ename"] == "ValueError"
    (error,) = run.of_type("error")
    assert error["content"]["evalue"] == "from the cell"
    assert any("line 3" in line for line in error["content"]["traceback"])
    assert run.of_type("update_display_data")  # the panel still froze into its summary
    assert evaluate(client, GUARD_THREADS) == "[]"


def test_fifty_guarded_cells_leave_no_threads_widgets_or_memory_behind(client):
    execute(client, "%%gpuguard --interval 0.05\npass")
    widgets_before = evaluate(client, LIVE_WIDGETS)
    rss_before = int(evaluate(client, RSS_MIB))
    for _ in range(50):
        assert (
            execute(client, "%%gpuguard --interval 0.05\nimport time\ntime.sleep(0.06)").status
            == "ok"
        )
    assert evaluate(client, GUARD_THREADS) == "[]"
    assert evaluate(client, LIVE_WIDGETS) == widgets_before
    assert int(evaluate(client, RSS_MIB)) - rss_before < 40


def test_a_capture_in_the_cell_keeps_the_persons_outputs_and_none_of_the_panels(client):
    """The panel redraws from the sampler's thread: through the shell's publisher of the moment,
    its drawings (four a second) piled up in the person's ``%%capture`` variable."""
    run = execute(
        client,
        "%%gpuguard --interval 0.1\n%%capture captured\nimport time\nprint('mine')\ntime.sleep(1.5)",
    )
    assert run.status == "ok"
    assert run.panel_redraws_before_reply() >= 3  # the page still gets them
    assert evaluate(client, "captured.stdout") == repr("mine\n")
    assert evaluate(client, "len(captured.outputs)") == "0"
