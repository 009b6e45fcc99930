"""In a real kernel: the state file the server extension reads, while a guarded cell runs, after
it ends, and after the extension is unloaded."""

from __future__ import annotations

import itertools
import json
import time

import pytest

from ..oom_cells import keras_fit_cliff
from ..protocol.validate import assert_valid
from .client import collect, execute, kernel

pytestmark = pytest.mark.kernel

STEPPING = """%%gpuguard --interval 0.1
import time, ipy_gpuguard
for step in range(35):
    time.sleep(0.1)
    ipy_gpuguard.heartbeat()
"""


def test_the_state_file_follows_a_guarded_cell_at_most_once_a_second(tmp_path):
    connection_file = tmp_path / "kernel-0a1b2c3d-test.json"
    earlier = tmp_path / "ipy_gpuguard" / "kernel-0a1b2c3d-test.json"
    earlier.parent.mkdir()
    earlier.write_text(json.dumps({"pid": 1, "running": True}))  # before a restart
    with kernel(
        str(connection_file), GPUGUARD_SIMULATE="8GiB", JUPYTER_RUNTIME_DIR=str(tmp_path)
    ) as client:
        assert execute(client, "%load_ext ipy_gpuguard").status == "ok"
        loaded = json.loads(earlier.read_text())  # this process's record replaced it
        assert_valid("KernelState", loaded)
        assert (loaded["running"], loaded["cell"], loaded["outcome"]) == (False, None, None)
        assert loaded["pid"] != 1
        assert loaded["host_total_bytes"] > 0

        msg_id = client.execute(STEPPING)
        seen = {}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            files = list(tmp_path.glob("ipy_gpuguard/kernel-*.json"))
            if files:
                state = json.loads(files[0].read_text())
                assert_valid("KernelState", state)
                seen[state["updated_at"]] = state
                if state["outcome"] is not None:  # ended (the guard's load wrote one too)
                    break
            time.sleep(0.05)
        assert collect(client, msg_id).status == "ok"

        (path,) = tmp_path.glob("ipy_gpuguard/kernel-*.json")
        running = [seen[at] for at in sorted(seen) if seen[at]["running"]]
        assert len(running) >= 3  # the start, then samples while it ran
        assert running[0]["cell"]["first_line"] == "import time, ipy_gpuguard"
        assert running[-1]["step"] > 0
        gaps = [b["updated_at"] - a["updated_at"] for a, b in itertools.pairwise(running)]
        assert min(gaps) >= 0.95  # at most once a second
        ended = json.loads(path.read_text())
        assert ended["running"] is False
        assert ended["outcome"] == "ok"
        assert ended["step"] == 35
        assert ended["kernel_id"] == "0a1b2c3d-test"

        assert execute(client, "%%gpuguard\n1/0").status == "error"
        failed = json.loads(path.read_text())
        assert failed["outcome"] == "error"
        assert failed["cell"]["first_line"] == "1/0"

        assert execute(client, "%unload_ext ipy_gpuguard").status == "ok"
        assert not path.exists()


def test_after_a_retry_that_fixed_the_cell_the_state_file_says_fixed_and_its_count(tmp_path):
    """Issue 21: the state file said ``outcome: error`` after a retry that fixed the cell, and
    named another execution count than the frontend showed."""
    connection_file = tmp_path / "kernel-5e5e5e5e-test.json"
    with kernel(
        str(connection_file),
        GPUGUARD_SIMULATE="8GiB",
        TF_ENABLE_ONEDNN_OPTS="0",
        TF_CPP_MIN_LOG_LEVEL="2",
        JUPYTER_DATA_DIR=str(tmp_path / "data"),
        JUPYTER_RUNTIME_DIR=str(tmp_path),
    ) as client:
        assert execute(client, "%load_ext ipy_gpuguard").status == "ok"
        assert execute(client, "1 + 1").status == "ok"  # the counts run on
        failed = execute(client, "%%gpuguard\n" + keras_fit_cliff(256, 100), timeout=240)
        assert failed.status == "error"
        shown = failed.reply["content"]["execution_count"]
        (path,) = tmp_path.glob("ipy_gpuguard/kernel-*.json")
        state = json.loads(path.read_text())
        assert (state["outcome"], state["cell"]["execution_count"]) == ("error", shown)

        assert execute(client, "%gpuguard retry", timeout=240).status == "ok"
        state = json.loads(path.read_text())
        assert_valid("KernelState", state)
        assert state["outcome"] == "fixed"
        assert state["cell"]["execution_count"] == shown
