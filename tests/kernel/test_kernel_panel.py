"""The guard inside a real Jupyter kernel: what a notebook frontend receives."""

from __future__ import annotations

import pytest

from .client import evaluate, execute, kernel

pytestmark = pytest.mark.kernel

GUARD_THREADS = (
    "[t.name for t in __import__('threading').enumerate() if t.name.startswith('ipy_gpuguard')]"
)
LIVE_WIDGETS = "len(__import__('ipywidgets').widgets.widget._instances)"
RSS_MIB = "__import__('psutil').Process().memory_info().rss // 2**20"


@pytest.fixture(scope="module")
def client():
    with kernel(GPUGUARD_SIMULATE="8GiB") as client:
        assert execute(client, "%load_ext ipy_gpuguard").status == "ok"
        yield client


def test_panel_updates_stream_while_the_cell_runs(client):
    run = execute(client, "%%gpuguard\nimport time\nblock = bytearray(64 * 2**20)\ntime.sleep(3)")
    assert run.status == "ok"
    assert run.widget_updates_before_reply() >= 4
    displays = run.of_type("display_data")
    assert "application/vnd.jupyter.widget-view+json" in displays[0]["content"]["data"]
    (frozen,) = run.of_type("update_display_data")
    assert "ipy_gpuguard · finished" in frozen["content"]["data"]["text/plain"]
    assert "peak" in frozen["content"]["data"]["text/html"]
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
    widgets_before = int(evaluate(client, LIVE_WIDGETS))
    rss_before = int(evaluate(client, RSS_MIB))
    for _ in range(50):
        assert (
            execute(client, "%%gpuguard --interval 0.05\nimport time\ntime.sleep(0.06)").status
            == "ok"
        )
    assert evaluate(client, GUARD_THREADS) == "[]"
    assert int(evaluate(client, LIVE_WIDGETS)) == widgets_before
    assert int(evaluate(client, RSS_MIB)) - rss_before < 40
