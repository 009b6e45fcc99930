"""``%gpuguard doctor`` in a real IPython shell, on this machine."""

from __future__ import annotations

import pytest
from IPython.utils.capture import capture_output

from ipy_gpuguard.doctor.render import DOCTOR_MIME


@pytest.mark.tensorflow
def test_doctor_shows_the_report_of_the_real_machine_not_the_simulated_gpu(shell):
    with capture_output() as captured:
        shell.run_line_magic("gpuguard", "doctor")
    first, *updates = captured.outputs
    assert first.data["text/plain"] == "Checking the GPU environment…"
    assert any(
        "Importing TensorFlow in a child process" in out.data["text/plain"] for out in updates
    )
    report = updates[-1].data
    assert report["text/plain"].startswith("GPU environment: 1 problem")
    assert "GPUs seen: no GPU: NVML library not found" in report["text/plain"]
    assert report[DOCTOR_MIME]["exit_status"] == 1
    # The report is static; a terminal gets no controls (a Jupyter kernel does, under it).
    assert not any("application/vnd.jupyter.widget-view+json" in out.data for out in updates)


def test_doctor_json_returns_the_data(shell):
    data = shell.run_line_magic("gpuguard", "doctor --json")
    checks = {check["id"]: check["status"] for check in data["checks"]}
    assert checks["gpus"] == "problem"
    assert checks["python"] == "ok"
    assert data["exit_status"] == 1


def test_wrong_doctor_input_is_one_usage_line(shell, capsys):
    shell.run_cell("%gpuguard doctor now")
    shell.run_cell("%gpuguard status --json")
    out = capsys.readouterr()
    text = out.out + out.err
    assert "UsageError: %gpuguard doctor takes only --json, not 'now'" in text
    assert (
        "UsageError: %gpuguard: --json goes with doctor or forecast, as in %gpuguard doctor --json"
        in text
    )
    assert "Traceback" not in text
