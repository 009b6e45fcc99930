from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest
import tensorflow as tf

from ipy_gpuguard.diagnosis import Context, diagnose
from ipy_gpuguard.diagnosis.context import allowed_environment
from ipy_gpuguard.protocol import SCHEMA_VERSION
from ipy_gpuguard.shell.incidents import Incident, IncidentLog

pytestmark = pytest.mark.tensorflow

OOM = "OOM when allocating tensor with shape[64,512] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc"


def incident(**overrides):
    diagnosis = diagnose(tf.errors.ResourceExhaustedError(None, None, OOM), Context())
    environment = allowed_environment(
        {"CUDA_VISIBLE_DEVICES": "0", "AWS_SECRET_ACCESS_KEY": "hunter2", "HOME": "/home/me"}
    )
    return Incident.of(diagnosis, {"interval_s": 0.5}, "freed memory", environment, **overrides)


def test_incidents_are_json_lines_read_back_oldest_first(tmp_path):
    log = IncidentLog(tmp_path / "sub" / "incidents.jsonl")
    assert log.recent(5) == []
    log.append(incident())
    log.append(incident(cell="model.fit(x, batch_size=64)"))
    lines = (tmp_path / "sub" / "incidents.jsonl").read_text().splitlines()
    assert len(lines) == 2
    first = json.loads(lines[0])
    assert first["rule_id"] == "oom.tf.tensor"
    assert first["facts"]["shape"] == [64, 512]
    assert first["environment"] == {"CUDA_VISIBLE_DEVICES": "0"}  # nothing off the allow-list
    assert first["cell"] is None
    assert [record["cell"] for record in log.recent(5)] == [None, "model.fit(x, batch_size=64)"]
    assert len(log.recent(1)) == 1


def test_a_line_cut_by_a_crash_is_skipped(tmp_path):
    path = tmp_path / "incidents.jsonl"
    log = IncidentLog(path)
    log.append(incident())
    with path.open("a") as file:
        file.write('{"rule_id": "oom.tf.ten')
    assert [record["rule_id"] for record in log.recent(10)] == ["oom.tf.tensor"]


#: Appends one incident with the file size limited to a few bytes more than the log holds: a
#: disk that fills up in the middle of the line (the write stops short, then fails).
APPEND_ON_A_FULL_DISK = """
import resource, signal, sys
from pathlib import Path
from ipy_gpuguard.shell.incidents import Incident, IncidentLog
path = Path(sys.argv[1])
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (path.stat().st_size + 40, resource.RLIM_INFINITY))
cut = Incident("now", "oom.cut", "oom", "cut", "E", {}, {}, "card shown")
sys.exit(0 if IncidentLog(path).append(cut) else 3)
"""


def test_the_first_incident_after_a_full_disk_is_not_glued_to_the_cut_line(tmp_path):
    """Issue 35 item 5: it was appended to the line the full disk cut, and lost to history."""
    path = tmp_path / "incidents.jsonl"
    log = IncidentLog(path)
    log.append(incident())
    full = subprocess.run(
        [sys.executable, "-c", APPEND_ON_A_FULL_DISK, str(path)], capture_output=True, text=True
    )
    assert full.returncode == 3, full.stderr  # the append said it could not write
    assert "cannot write the incident log" in full.stderr
    assert not path.read_bytes().endswith(b"\n")  # the line was cut by the full disk
    assert log.append(incident(cell="after"))  # space came back
    assert [record["cell"] for record in log.recent(10)] == [None, "after"]


def test_an_incident_log_that_cannot_be_written_is_one_warning_line(tmp_path, capsys):
    blocker = tmp_path / "home"
    blocker.write_text("not a directory")
    log = IncidentLog(blocker / "ipy_gpuguard" / "incidents.jsonl")
    incident = Incident.of(diagnose("CUDA_ERROR_OUT_OF_MEMORY", Context()), {}, "card shown", {})
    assert log.append(incident) is False
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("ipy_gpuguard: cannot write the incident log")


def test_the_log_is_its_owners_alone_and_carries_the_schema_version_pid_and_cell(tmp_path):
    log = IncidentLog(tmp_path / "incidents.jsonl")
    incident = Incident.of(
        diagnose("CUDA_ERROR_OUT_OF_MEMORY", Context()), {}, "card shown", {}, None, "cell-9"
    )
    assert log.append(incident)
    assert stat.S_IMODE(log.path.stat().st_mode) == 0o600
    (record,) = log.recent(5)
    assert record["version"] == SCHEMA_VERSION
    assert record["pid"] == os.getpid()
    assert record["cell_id"] == "cell-9"


def test_a_deeply_nested_line_is_skipped(tmp_path):
    log = IncidentLog(tmp_path / "incidents.jsonl")
    log.path.write_text("[" * 100_000 + "]" * 100_000 + '\n{"rule_id": "oom.tf.tensor"}\n')
    assert log.recent(5) == [{"rule_id": "oom.tf.tensor"}]


def test_a_link_planted_at_the_log_is_not_followed(tmp_path, capsys):
    """Issue 22 item 2: a failed cell appended its JSON to the person's own file."""
    own = tmp_path / "notes.txt"
    own.write_text("the person's notes\n")
    (tmp_path / "incidents.jsonl").symlink_to(own)
    log = IncidentLog(tmp_path / "incidents.jsonl")
    assert log.append(incident()) is False
    assert own.read_text() == "the person's notes\n"
    warning = capsys.readouterr().err
    assert "a link, which the guard does not follow" in warning
    assert len(warning.splitlines()) == 1


def test_a_log_others_can_read_is_made_private_before_it_gets_the_cells_source(tmp_path, capsys):
    """Issue 22 item 3: a log of mode 0644 got the cell's source (an API_KEY line), no warning."""
    path = tmp_path / "incidents.jsonl"
    path.write_text("")
    path.chmod(0o644)
    log = IncidentLog(path)
    assert log.append(incident(cell="API_KEY = 'k'\nmodel.fit(x)"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "could be read by others; it is now yours alone" in capsys.readouterr().err
    assert log.recent(1)[0]["cell"].startswith("API_KEY")


def test_a_fifo_at_the_log_neither_hangs_the_cell_nor_history(tmp_path, capsys):
    """Issue 22 item 6: a FIFO at the incident log hung the guarded cell, and Stop could not
    end it (the guard held SIGINT)."""
    path = tmp_path / "incidents.jsonl"
    os.mkfifo(path)
    log = IncidentLog(path)
    assert log.append(incident()) is False
    assert "not a regular file" in capsys.readouterr().err
    with pytest.raises(OSError, match="not a regular file"):
        log.recent(1)
