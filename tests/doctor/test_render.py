"""The report as text, HTML, data and widgets."""

from __future__ import annotations

import json

import ipywidgets

from ipy_gpuguard.doctor import Status, run_doctor
from ipy_gpuguard.doctor.render import (
    DOCTOR_MIME,
    SYMBOLS,
    report_data,
    report_html,
    report_text,
    summary_text,
)
from ipy_gpuguard.doctor.widget import DoctorTable

from ..telemetry.fake_pynvml import FakeGpu
from .fakes import machine, tensorflow_view

GIB = 1024**3


def troubled_report():
    """A warning (another process), a problem (CPU-only TensorFlow) and hostile text."""
    gpu = FakeGpu(processes=[(4242, 30 * GIB)])
    return run_doctor(
        machine(
            gpus=[gpu],
            versions={"tensorflow-cpu": "2.20.0"},
            tensorflow=tensorflow_view(build={"is_cuda_build": False}, gpus=()),
            process_name={4242: "<script>alert(1)</script>"}.get,
        )
    )


def test_text_has_a_line_per_check_with_its_status_and_wraps_to_the_width():
    report = troubled_report()
    text = report_text(report, width=80)
    lines = text.splitlines()
    assert lines[0] == summary_text(report)
    assert summary_text(report).startswith("GPU environment: 2 problems, 2 warnings, 6 ok")
    heads = [line for line in lines if line[:1] in "✓!✗?" and line.strip()]
    assert [line.split("  ")[0] for line in heads] == [
        f"{SYMBOLS[check.status]} {check.status.value}" for check in report.checks
    ]
    assert all(check.title in head for check, head in zip(report.checks, heads, strict=True))
    assert "✗ problem          TensorFlow can use a GPU: TensorFlow 2.20.0 (tensorflow-cpu)" in text
    assert text.count("→ Install TensorFlow's GPU build: A CPU-only TensorFlow") == 1
    assert text.count("→ Install TensorFlow's GPU build: see above") == 1  # the second row's
    assert all(len(line) <= 80 for line in lines if " " in line.strip()), max(lines, key=len)
    assert "\033[" not in text
    assert "\033[31m✗ problem" in report_text(report, colour=True)


def test_html_escapes_what_came_from_the_machine():
    html = report_html(troubled_report())
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert html.count('<tr data-check="') == 10


def test_data_is_json_with_every_check_and_its_remedies():
    report = troubled_report()
    data = json.loads(json.dumps(report_data(report)))
    assert data["exit_status"] == 1
    assert data["counts"] == {"ok": 6, "warning": 2, "problem": 2, "could not check": 0}
    assert [check["id"] for check in data["checks"]] == [check.id for check in report.checks]
    gpu = next(check for check in data["checks"] if check["id"] == "tensorflow_gpu")
    assert gpu["status"] == "problem"
    assert gpu["remedies"][0]["id"] == "install_gpu_tensorflow"
    assert gpu["remedies"][0]["links"][0]["url"] == "https://www.tensorflow.org/install/pip"


def test_the_widget_filters_and_checks_again():
    troubled = troubled_report()
    healthy = run_doctor(machine())
    seen_during = []

    def check_again(announce):
        announce("Importing TensorFlow in a child process…")
        seen_during.append((table.button.disabled, table.summary.value))
        return healthy

    table = DoctorTable(troubled, check_again)
    assert isinstance(table.widget, ipywidgets.VBox)
    assert table.table.value.count("<tr data-check=") == 10
    table.filter.value = "attention"
    assert table.table.value.count("<tr data-check=") == 4
    table.button.click()
    assert seen_during == [(True, "<i>Importing TensorFlow in a child process…</i>")]
    assert table.report is healthy
    assert table.button.disabled is False
    assert table.table.value.count("<tr data-check=") == 0  # nothing needs attention now
    assert "10 ok" in table.summary.value


def test_the_widget_carries_the_static_renderings_for_other_frontends():
    report = troubled_report()
    bundle = DoctorTable(report, lambda announce: report)._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"] == report_text(report)
    assert bundle[DOCTOR_MIME]["checks"][0]["id"] == "python"
    assert bundle["text/html"] == report_html(report)
    assert {check.status for check in report.checks} >= {Status.OK, Status.PROBLEM}
