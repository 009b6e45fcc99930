from __future__ import annotations

import ipywidgets.widgets.widget as widget_module
import pytest

from ipy_gpuguard.protocol import LIVE_PANEL_METADATA
from ipy_gpuguard.ui.panel import MemoryPanel
from ipy_gpuguard.ui.summary import PanelSummary

from ..protocol.validate import assert_valid
from .test_render import GIB, T4, view


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_panel_draws_bars_and_labels_from_the_view():
    panel = MemoryPanel((T4,))
    panel.draw(view)
    row = panel._rows[0]
    assert row.bar.value == 12 / 15
    assert row.bar.bar_style == ""
    assert "GPU 0 · Tesla T4 · 12.0 GiB / 15.0 GiB (80%)" in row.label.value
    assert "util 97%" in row.stats.value
    assert row.chart.value.startswith("<svg")
    panel.close()


def test_redraws_are_at_most_four_a_second():
    clock = Clock()
    panel = MemoryPanel((T4,), clock=clock)
    drawn, built = [], []

    def counted_view():
        built.append(1)
        return view()

    for _ in range(40):  # ten samples a second for four seconds
        drawn.append(panel.draw(counted_view))
        clock.now += 0.1
    assert panel.redraws == sum(drawn)
    assert 14 <= panel.redraws <= 16
    assert len(built) == panel.redraws  # no rendering work for the samples not drawn
    assert panel.draw(view, force=True)
    panel.close()


def test_bar_turns_red_near_capacity():
    from ipy_gpuguard.telemetry import DeviceReading, DeviceSample, Sample

    full = Sample(
        1.0, (DeviceSample(0, DeviceReading(used_bytes=int(14.5 * GIB), total_bytes=15 * GIB)),)
    )
    panel = MemoryPanel((T4,))
    panel.draw(lambda: view(history=(full,)))
    assert panel._rows[0].bar.bar_style == "danger"
    panel.close()


def test_close_leaves_no_widget_behind():
    before = len(widget_module._instances)
    panel = MemoryPanel((T4, T4))
    assert len(widget_module._instances) > before
    panel.close()
    assert len(widget_module._instances) == before


def test_panel_bundle_is_a_widget_view_marked_live_and_summary_is_static():
    panel = MemoryPanel((T4,))
    bundle, metadata = panel._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    # What a frontend shows instead once the kernel died (the summary comes with no mark).
    mark = metadata[LIVE_PANEL_METADATA]
    assert_valid("LivePanel", mark)
    assert mark["stopped_text"].startswith("ipy_gpuguard · stopped: the kernel died")
    panel.close()
    summary = PanelSummary(view())._repr_mimebundle_()
    assert set(summary) == {"text/plain", "text/html"}
    assert summary["text/plain"].startswith("ipy_gpuguard · finished")


def test_a_widget_constructor_that_fails_halfway_leaves_no_widget_behind(monkeypatch):
    """Issue 22 item 18: a failing widget constructor leaked 19 widgets a cell."""
    import ipywidgets

    before = len(widget_module._instances)
    made = []
    html = ipywidgets.HTML

    def failing_after_some(*args, **kwargs):
        if len(made) == 6:  # the second row's label: the first row, the titles and more are made
            raise RuntimeError("comm closed")
        made.append(html(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(ipywidgets, "HTML", failing_after_some)
    with pytest.raises(RuntimeError, match="comm closed"):
        MemoryPanel((T4, T4))
    assert len(made) == 6
    assert len(widget_module._instances) == before
