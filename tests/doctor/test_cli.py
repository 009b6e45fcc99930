"""``python -m ipy_gpuguard doctor`` for real, on this machine: no GPU, a CPU TensorFlow."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ipy_gpuguard.cli import main
from ipy_gpuguard.doctor import CHECKS


def fresh_environment(tmp_path):
    """Only what a new shell has: no variable of this test session, a new home."""
    return {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "LANG": "C.UTF-8"}


@pytest.mark.tensorflow
def test_json_on_this_machine_reports_no_gpu_with_the_reason_and_exits_1(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "ipy_gpuguard", "doctor", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        env=fresh_environment(tmp_path),
        cwd=tmp_path,
    )
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    # no NVIDIA driver here: no row of the Xids it would have logged, nor of GPU numbers
    unasked = ("driver_errors", "gpu_numbers")
    expected = [check_id for check_id, _, _ in CHECKS if check_id not in unasked]
    assert [check["id"] for check in report["checks"]] == expected
    checks = {check["id"]: check for check in report["checks"]}
    assert checks["gpus"]["status"] == "problem"
    assert checks["gpus"]["found"].startswith("no GPU: NVML library not found")
    assert checks["gpus"]["remedies"][0]["id"] == "check_gpu_visible"
    assert checks["tensorflow_build"]["found"].endswith("a CPU-only build")
    assert report["exit_status"] == 1
    assert "Importing TensorFlow in a child process" in result.stderr  # said while it happens


@pytest.mark.tensorflow
def test_text_in_a_terminal(capsys):
    assert main(["doctor"]) == 1
    out = capsys.readouterr()
    assert out.out.startswith("GPU environment: 1 problem")
    assert "✗ problem" in out.out
    assert "GPUs seen: no GPU: NVML library not found" in out.out
    assert "Importing TensorFlow" in out.err


def test_a_wrong_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["doktor"])
    assert exit.value.code == 2
    assert "invalid choice: 'doktor'" in capsys.readouterr().err
