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
