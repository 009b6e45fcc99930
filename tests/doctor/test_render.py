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
from ipy_gpuguard.doctor.widget import DoctorControls, DoctorReport

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
    assert summary_text(report).startswith("GPU environment: 2 problems, 2 warnings, 7 ok")
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
    assert html.count('<tr data-check="') == 11


def test_data_is_json_with_every_check_and_its_remedies():
    report = troubled_report()
    data = json.loads(json.dumps(report_data(report)))
    assert data["exit_status"] == 1
    assert data["counts"] == {"ok": 7, "warning": 2, "problem": 2, "could not check": 0}
    assert [check["id"] for check in data["checks"]] == [check.id for check in report.checks]
    gpu = next(check for check in data["checks"] if check["id"] == "tensorflow_gpu")
    assert gpu["status"] == "problem"
    assert gpu["remedies"][0]["id"] == "install_gpu_tensorflow"
    assert gpu["remedies"][0]["links"][0]["url"] == "https://www.tensorflow.org/install/pip"


def test_the_controls_filter_and_check_again_by_redrawing_the_report():
    troubled = troubled_report()
    healthy = run_doctor(machine())
    seen_during = []
    shown = []

    def check_again(announce):
        announce("Importing TensorFlow in a child process…")
        seen_during.append((controls.button.disabled, controls.status.value))
        return healthy

    def rows():
        return shown[-1]._repr_mimebundle_()["text/html"].count("<tr data-check=")

    controls = DoctorControls(troubled, check_again, shown.append)
    assert isinstance(controls.widget, ipywidgets.HBox)
    controls.filter.value = "attention"
    assert rows() == 4
    controls.filter.value = "all"
    assert rows() == 11
    controls.filter.value = "attention"
    controls.button.click()
    assert seen_during == [(True, "<i>Importing TensorFlow in a child process…</i>")]
    assert controls.report is healthy
    assert controls.button.disabled is False
    assert controls.status.value == ""
    assert rows() == 0  # nothing needs attention now
    assert "11 ok" in shown[-1]._repr_mimebundle_()["text/html"]


def test_the_report_is_a_static_display_and_the_controls_hold_no_words():
    """Issue 21: a report that was one widget display vanished from a notebook converted
    offline (the saved widget view wins over the HTML beside it)."""
    report = troubled_report()
    bundle = DoctorReport(report)._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" not in bundle
    assert bundle["text/plain"] == report_text(report)
    assert bundle[DOCTOR_MIME]["checks"][0]["id"] == "python"
    assert bundle["text/html"] == report_html(report)
    assert {check.status for check in report.checks} >= {Status.OK, Status.PROBLEM}
    controls = DoctorControls(report, lambda announce: report, lambda shown: None)
    bundle = controls._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"] == ""
