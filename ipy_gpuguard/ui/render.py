"""The panel as text and escaped HTML: pure functions of a :class:`PanelView`.

The live panel uses the per-device pieces; the frozen summary (what a saved notebook keeps)
and the terminal use the whole. Every string that comes from outside (device names, error
messages) is escaped.
"""

from __future__ import annotations

from html import escape

from ..protocol import DeviceSeries
from ..record import PanelView, device_fraction, device_series, used_fraction
from ..telemetry import AllocatorReading, DeviceInfo, DeviceSample
from ..telemetry.units import format_bytes
from .watch_render import summary_lines

_CHART_WIDTH, _CHART_HEIGHT = 240, 36
_DEVICE_COLOUR, _ALLOCATOR_COLOUR = "#1976d2", "#7b1fa2"


#: What a live panel becomes when its kernel dies while the cell runs (the frontend shows it).
STOPPED_BY_DEATH_TEXT = (
    "ipy_gpuguard · stopped: the kernel died while this cell ran, and its live panel with it; "
    "what the kernel last recorded is in the notification."
)
#: What a live panel becomes when its kernel is restarted while the cell runs.
STOPPED_BY_RESTART_TEXT = (
    "ipy_gpuguard · stopped: the kernel was restarted while this cell ran, and its live panel "
    "with it."
)


def title_text(view: PanelView) -> str:
    state = "finished" if view.finished else "running"
    return f"ipy_gpuguard · {state} · {view.elapsed_s:.1f} s · {view.source_summary}"


def device_label_text(info: DeviceInfo, sample: DeviceSample | None) -> str:
    """``GPU 0 · NVIDIA A100 · 3.20 GiB / 80.0 GiB (4%)``."""
    reading = sample.device if sample else None
    total = (reading.total_bytes if reading else None) or info.total_bytes
    fraction = device_fraction(info, sample)
    share = f" ({fraction:.0%})" if fraction is not None else ""
    used = format_bytes(reading.used_bytes if reading else None)
    return f"GPU {info.index} · {info.name} · {used} / {format_bytes(total)}{share}"


def device_stats_text(sample: DeviceSample | None, simulated: bool = False) -> str:
    """Allocator, utilisation, temperature and power; ``n/a`` where the device does not say;
    a simulated device's figures say so on the same line."""
    if sample is None:
        return "waiting for the first sample"
    if sample.device.problem:
        return sample.device.problem
    reading = sample.device
    missing = f"{reading.memory_missing} · " if reading.memory_missing else ""
    parts = [
        _allocator_text(sample.allocator),
        f"util {_or_na(reading.utilization_percent, '{}%')}",
        _or_na(reading.temperature_c, "{} °C"),
        _or_na(reading.power_watts, "{:.0f} W"),
    ]
    return missing + " · ".join(parts) + (" (simulated)" if simulated else "")


def _allocator_text(allocator: AllocatorReading | None) -> str:
    if allocator is None:
        return "allocator n/a"
    return (
        f"{allocator.framework} allocator {format_bytes(allocator.current_bytes)} now, "
        f"{format_bytes(allocator.peak_bytes)} peak"
    )


def _or_na(value: float | None, template: str) -> str:
    return "n/a" if value is None else template.format(value)


def peak_text(view: PanelView, info: DeviceInfo) -> str:
    """``GPU 0 · Tesla T4: peak 7.10 GiB of 15.0 GiB (47%); TensorFlow allocator peak 6.02 GiB``."""
    peak = view.peak_of(info.index)
    used = peak.device_used_bytes if peak else None
    if used is None:
        return f"GPU {info.index} · {info.name}: {_why_no_memory(view, info)}; no memory reading"
    fraction = used_fraction(used, info.total_bytes)
    share = f" ({fraction:.0%})" if fraction is not None else ""
    text = f"GPU {info.index} · {info.name}: peak {format_bytes(used)} of {format_bytes(info.total_bytes)}{share}"
    allocator = peak.allocator_peak_bytes if peak else None
    framework = _framework_seen(view, info.index)
    if allocator is not None and framework:
        text += f"; {framework} allocator peak {format_bytes(allocator)}"
    return text


def _why_no_memory(view: PanelView, info: DeviceInfo) -> str:
    """Why a device has no memory figure: what its last reading said, else the plain fact."""
    latest = view.latest_of(info.index)
    if latest is None:
        return "no sample was taken"
    reading = latest.device
    return reading.problem or reading.memory_missing or "the device did not report its memory"


def _framework_seen(view: PanelView, index: int) -> str | None:
    for sample in reversed(view.history):
        for device in sample.devices:
            if device.index == index and device.allocator is not None:
                return device.allocator.framework
    return None


def summary_text(view: PanelView) -> str:
    """The frozen panel as plain text: terminals, and the ``text/plain`` of a saved notebook."""
    lines = [title_text(view)]
    lines += [peak_text(view, info) for info in view.devices]
    lines += list(view.notes)
    lines += summary_lines(view)
    return "\n".join(lines)


def summary_html(view: PanelView) -> str:
    """The frozen panel as static HTML, which a saved notebook keeps after the kernel is gone."""
    rows = "".join(
        f"<div>{escape(peak_text(view, info))}</div>{memory_chart_svg(device_series(view, info))}"
        for info in view.devices
    )
    notes = "".join(f"<div>{escape(note)}</div>" for note in view.notes)
    watch = "\n".join(summary_lines(view))
    if watch:
        notes += f'<pre style="margin:0;font-size:11px">{escape(watch)}</pre>'
    return (
        '<div class="ipy-gpuguard-summary" style="font-family:monospace;font-size:12px">'
        f"<div><b>{escape(title_text(view))}</b></div>{rows}{notes}</div>"
    )


def notes_html(view: PanelView) -> str:
    return "".join(f'<div style="color:#b26a00">{escape(note)}</div>' for note in view.notes)


def memory_chart_svg(series: DeviceSeries) -> str:
    """A small chart of device memory (solid) and allocator memory (dashed) over the run.

    The scale is the run's own peak with a quarter of headroom, capped at the device's memory,
    so the shape of a run that uses 10% of a GPU is still visible; the bar and the label already
    say how near capacity it is, and the chart's title gives its scale.
    """
    total = series.total_bytes
    if not total or len(series.elapsed_s) < 2:
        return ""
    values = [*series.device_used_bytes, *series.allocator_bytes]
    highest = max((value for value in values if value), default=1)
    scale = min(total, int(highest * 1.25))
    times = list(series.elapsed_s)
    return (
        f'<svg width="{_CHART_WIDTH}" height="{_CHART_HEIGHT}" role="img" '
        f'aria-label="memory of GPU {series.index} over the run, 0 to {format_bytes(scale)}" '
        'style="border:1px solid #ddd;display:block">'
        f"<title>GPU {series.index} memory over the run: device (solid), allocator (dashed); "
        f"0 to {escape(format_bytes(scale))}</title>"
        f"{_polyline(times, list(series.device_used_bytes), scale, _DEVICE_COLOUR, '')}"
        f"{_polyline(times, list(series.allocator_bytes), scale, _ALLOCATOR_COLOUR, '3 2')}"
        "</svg>"
    )


def _polyline(
    times: list[float], values: list[int | None], scale: int, colour: str, dash: str
) -> str:
    start, span = times[0], max(times[-1] - times[0], 1e-9)
    coords = " ".join(
        f"{(elapsed - start) / span * _CHART_WIDTH:.1f},"
        f"{_CHART_HEIGHT * (1 - min(value / scale, 1.0)):.1f}"
        for elapsed, value in zip(times, values, strict=True)
        if value is not None
    )
    if not coords:
        return ""
    return (
        f'<polyline points="{coords}" fill="none" stroke="{colour}" '
        f'stroke-width="1.5" stroke-dasharray="{dash or "none"}"/>'
    )
