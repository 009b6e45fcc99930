"""In a real kernel: the guard ends whatever ipykernel reports when a cell ends (issue 14)."""

from __future__ import annotations

import pytest

from .client import evaluate, execute, kernel

pytestmark = pytest.mark.kernel

GUARD_THREADS = (
    "[t.name for t in __import__('threading').enumerate() if t.name.startswith('ipy_gpuguard')]"
)

UNPRINTABLE = """%%gpuguard --on-hang interrupt --timeout 1
class Unprintable(Exception):
    def __str__(self):
        raise ValueError("no text")
raise Unprintable()
"""
CYCLE = """%%gpuguard
try:
    raise ValueError("a")
except ValueError as first:
    second = KeyError("b")
    second.__context__ = first
    first.__context__ = second
    raise second
"""


@pytest.mark.parametrize("cell", [UNPRINTABLE, CYCLE], ids=["unprintable", "cyclic-context"])
def test_the_guard_ends_when_ipykernel_reports_the_cell_with_another_info(cell):
    with kernel(GPUGUARD_SIMULATE="8GiB") as client:
        assert execute(client, "%load_ext ipy_gpuguard").status == "ok"
        assert execute(client, cell).status == "error"
        assert evaluate(client, GUARD_THREADS) == "[]"
        # The next guarded cell is guarded (its panel shows), and an idle kernel stays alive.
        guarded = execute(client, "%%gpuguard\nimport time; time.sleep(1.5)")
        assert guarded.status == "ok"
        assert "ipy_gpuguard · finished" in str([m["content"] for m in guarded.iopub])
        assert evaluate(client, GUARD_THREADS) == "[]"
        assert evaluate(client, "1 + 1") == "2"


OOM_CELL = "%%gpuguard\nraise RuntimeError('CUDA out of memory. Tried to allocate 2.00 GiB')"
WIDGETS = "len(__import__('ipywidgets').Widget.widgets)"


def test_only_the_last_cards_keep_their_widgets():
    """Issue 14, 10: 29 widgets per card were never closed (4,379 after 150 cards)."""
    from ipy_gpuguard.shell.actions import MAX_LIVE_CARDS

    with kernel(GPUGUARD_SIMULATE="8GiB") as client:
        assert execute(client, "%load_ext ipy_gpuguard").status == "ok"
        counts, frozen = [], []
        for run in range(MAX_LIVE_CARDS + 10):
            failed = execute(client, OOM_CELL)
            assert failed.status == "error"
            frozen += [  # an older card keeps its static form; its buttons are hidden
                msg
                for msg in failed.of_type("update_display_data")
                if msg["content"]["transient"]["display_id"].endswith("-controls")
                and msg["content"]["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
                == ""
            ]
            if run >= MAX_LIVE_CARDS:
                counts.append(int(evaluate(client, WIDGETS)))
        assert len(set(counts)) == 1  # past the last 20 cards, no widget more per card
        assert len(frozen) == 10  # each older card became its static form
