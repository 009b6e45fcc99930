"""The live panel's drawings: HTML a saved notebook keeps as it was last drawn (issue 35, item
13: a panel of widgets became "Error displaying widget: model not found" after a restart)."""

from __future__ import annotations

from ipy_gpuguard.protocol import LIVE_PANEL_METADATA
from ipy_gpuguard.ui.panel import LiveDrawing, panel_html
from ipy_gpuguard.ui.summary import PanelSummary

from ..protocol.validate import assert_valid
from .test_render import GIB, view


def test_a_drawing_shows_each_gpus_label_bar_figures_and_chart():
    html = panel_html(view(finished=False))
    assert "GPU 0 · Tesla T4 · 12.0 GiB / 15.0 GiB (80%)" in html
    assert "background:#1976d2;height:8px;border-radius:2px;width:80.0%" in html
    assert "util 97%" in html
    assert "<svg" in html
    assert "ipy_gpuguard · running" in html


def test_the_bar_turns_red_near_capacity():
    from ipy_gpuguard.telemetry import DeviceReading, DeviceSample, Sample

    full = Sample(
        1.0, (DeviceSample(0, DeviceReading(used_bytes=int(14.5 * GIB), total_bytes=15 * GIB)),)
    )
    assert "background:#d9534f;height:8px;border-radius:2px;width:96.7%" in panel_html(
        view(history=(full,))
    )


def test_a_device_name_from_the_driver_is_escaped():
    from ipy_gpuguard.telemetry import DeviceInfo

    odd = DeviceInfo(0, "<img src=x onerror=alert(1)>", 15 * GIB)
    html = panel_html(view(devices=(odd,)))
    assert "<img" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html


def test_a_drawing_is_html_marked_live_and_the_summary_is_static():
    bundle, metadata = LiveDrawing(view(finished=False))._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}  # no widget view: nothing to lose
    assert bundle["text/plain"].startswith("ipy_gpuguard · running")
    # What a frontend shows instead once the kernel died (the summary comes with no mark).
    mark = metadata[LIVE_PANEL_METADATA]
    assert_valid("LivePanel", mark)
    assert mark["stopped_text"].startswith("ipy_gpuguard · stopped: the kernel died")
    summary = PanelSummary(view())._repr_mimebundle_()
    assert set(summary) == {"text/plain", "text/html"}
    assert summary["text/plain"].startswith("ipy_gpuguard · finished")
