from __future__ import annotations

from ipy_gpuguard.record import PanelView, bar_style, device_series
from ipy_gpuguard.telemetry import (
    AllocatorReading,
    DeviceInfo,
    DevicePeak,
    DeviceReading,
    DeviceSample,
    Sample,
)
from ipy_gpuguard.ui import render

GIB = 1024**3
T4 = DeviceInfo(0, "Tesla T4", 15 * GIB)


def view(**changes):
    samples = (
        Sample(
            0.0, (DeviceSample(0, DeviceReading(used_bytes=1 * GIB, total_bytes=15 * GIB), None),)
        ),
        Sample(
            0.5,
            (
                DeviceSample(
                    0,
                    DeviceReading(
                        used_bytes=12 * GIB,
                        total_bytes=15 * GIB,
                        utilization_percent=97,
                        temperature_c=66,
                        power_watts=69.6,
                    ),
                    AllocatorReading("TensorFlow", 9 * GIB, 11 * GIB),
                ),
            ),
        ),
    )
    fields = {
        "source_kind": "nvml",
        "source_summary": "NVML, driver 550.54",
        "devices": (T4,),
        "history": samples,
        "peaks": (DevicePeak(0, 12 * GIB, 11 * GIB),),
        "elapsed_s": 12.34,
        "finished": True,
    }
    return PanelView(**{**fields, **changes})


def test_summary_text_golden():
    assert render.summary_text(view()) == (
        "ipy_gpuguard · finished · 12.3 s · NVML, driver 550.54\n"
        "GPU 0 · Tesla T4: peak 12.0 GiB of 15.0 GiB (80%); TensorFlow allocator peak 11.0 GiB"
    )


def test_device_label_and_stats_golden():
    current = view().latest_of(0)
    assert render.device_label_text(T4, current) == "GPU 0 · Tesla T4 · 12.0 GiB / 15.0 GiB (80%)"
    assert render.device_stats_text(current) == (
        "TensorFlow allocator 9.00 GiB now, 11.0 GiB peak · util 97% · 66 °C · 70 W"
    )


def test_unknown_values_read_n_a():
    sample = DeviceSample(0, DeviceReading(used_bytes=None, total_bytes=None))
    assert render.device_stats_text(sample) == "allocator n/a · util n/a · n/a · n/a"
    assert render.device_label_text(DeviceInfo(0, "GPU", None), sample) == "GPU 0 · GPU · n/a / n/a"


def test_a_device_problem_replaces_its_figures():
    sample = DeviceSample(0, DeviceReading(problem="GPU is lost"))
    assert render.device_stats_text(sample) == "GPU is lost"


def test_no_telemetry_summary_says_why():
    reason = "no GPU telemetry: NVML library not found"
    text = render.summary_text(
        view(
            source_kind="none",
            source_summary="no GPU telemetry",
            devices=(),
            history=(),
            peaks=(),
            notes=(reason,),
        )
    )
    assert text == f"ipy_gpuguard · finished · 12.3 s · no GPU telemetry\n{reason}"


def test_html_is_escaped():
    hostile = DeviceInfo(0, "<script>alert(1)</script>", 15 * GIB)
    html = render.summary_html(view(devices=(hostile,), notes=("<b>note</b>",)))
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;b&gt;note&lt;/b&gt;" in html


def test_chart_draws_device_and_allocator_lines():
    svg = render.memory_chart_svg(device_series(view(), T4))
    assert svg.startswith("<svg")
    assert svg.count("<polyline") == 2  # device memory, and allocator memory where known
    assert 'points="0.0,33.6 240.0,7.2"' in svg  # 1 GiB then 12 GiB of 15 GiB, 36 px high
    assert render.memory_chart_svg(device_series(view(history=view().history[:1]), T4)) == ""


def test_bar_turns_amber_then_red_near_capacity():
    assert bar_style(None) == ""
    assert bar_style(0.5) == ""
    assert bar_style(0.85) == "warning"
    assert bar_style(0.95) == "danger"


def test_chart_of_a_small_run_is_scaled_to_its_peak_not_to_the_device():
    big = DeviceInfo(0, "A100", 80 * GIB)
    small_run = tuple(
        Sample(t, (DeviceSample(0, DeviceReading(used_bytes=used, total_bytes=80 * GIB)),))
        for t, used in ((0.0, 0), (1.0, 1 * GIB))
    )
    svg = render.memory_chart_svg(device_series(view(devices=(big,), history=small_run), big))
    assert 'points="0.0,36.0 240.0,7.2"' in svg  # the peak sits at 80% of the height
    assert "0 to 1.25 GiB" in svg


def test_a_lost_gpu_says_so_instead_of_an_unknown_peak():
    """Issue 14, 17: it showed "peak n/a of n/a"."""
    lost = Sample(0.5, (DeviceSample(0, DeviceReading(problem="GPU is lost"), None),))
    text = render.peak_text(view(history=(lost,), peaks=()), T4)
    assert text == "GPU 0 · Tesla T4: GPU is lost; no memory reading"


def test_a_device_without_a_memory_reading_says_why_not_n_a_of_n_a():
    """Issue 22 item 18: a memory reading of ``None`` showed "peak n/a of n/a" with no reason."""
    said = DeviceReading(memory_missing="NVML could not read its memory (Unknown Error)")
    unsaid = DeviceReading(utilization_percent=3)
    for reading, why in (
        (said, "NVML could not read its memory (Unknown Error)"),
        (unsaid, "the device did not report its memory"),
    ):
        history = (Sample(0.5, (DeviceSample(0, reading, None),)),)
        text = render.peak_text(view(history=history, peaks=()), T4)
        assert text == f"GPU 0 · Tesla T4: {why}; no memory reading"
        assert "n/a" not in text
    stats = render.device_stats_text(DeviceSample(0, said, None))
    assert stats.startswith("NVML could not read its memory (Unknown Error) · ")
