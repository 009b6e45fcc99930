from __future__ import annotations

import pytest

from ipy_gpuguard.diagnosis import builds
from ipy_gpuguard.diagnosis.facts import extract_facts, fact_text, fill, message_bytes, tensor_bytes


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1.53GiB", int(1.53 * 1024**3)),
        ("3.80G", int(3.8 * 1024**3)),
        ("6291456 bytes", 6291456),
        ("2.00 GiB", 2 * 1024**3),
        ("890.06M", int(890.06 * 1024**2)),
        ("0 bytes", 0),
        ("many", None),
    ],
)
def test_sizes_as_frameworks_print_them(text, expected):
    assert message_bytes(text) == expected


def test_tensor_bytes_from_shape_and_dtype():
    assert tensor_bytes((32, 1024), "float") == 32 * 1024 * 4
    assert tensor_bytes((8, 8), "bf16") == 128
    assert tensor_bytes((2,), "string") is None


def test_an_exact_byte_count_wins_over_a_rounded_one():
    facts = extract_facts(
        [
            "ran out of memory trying to allocate 1.53GiB (rounded to 1638400000)requested by op Conv2D"
        ]
    )
    assert facts["requested_bytes"] == 1638400000
    assert facts["op"] == "Conv2D"


def test_a_generic_node_name_is_not_the_op():
    facts = extract_facts(
        ["Detected at node StatefulPartitionedCall defined at", "[[{{node model/conv/Conv2D}}]]"]
    )
    assert facts["op"] == "model/conv/Conv2D"
    assert facts["layer"] == "conv"


def test_fill_leaves_out_parts_whose_facts_are_unknown():
    template = "could not allocate<< {requested_bytes}>><< on {device}>>."
    assert fill(template, {"device": "GPU:0"}) == "could not allocate on GPU:0."
    assert (
        fill(template, {"requested_bytes": 2048, "device": "GPU:1"})
        == "could not allocate 2.00 KiB on GPU:1."
    )
    assert fill(template, {}) == "could not allocate."


def test_tested_builds_and_drivers():
    assert builds.tested_build("2.15.1").cuda == "12.2"
    assert builds.tested_build("2.4.0").cudnn == "8.0"
    assert builds.tested_build("2.99.0").tensorflow == "2.20"  # newer: the table's newest row
    assert builds.tested_build("nightly") is None
    assert builds.min_driver("12.3") == "525.60.13"
    assert builds.min_driver("10.1") == "418.39"


@pytest.mark.parametrize(
    ("fraction", "text"),
    [
        (0.0004, "under 1% of the current batch"),
        (0.004, "under 1% of the current batch"),
        (0.006, "about 1% of the current batch"),
        (0.25, "about 25% of the current batch"),
    ],
)
def test_an_estimate_never_reads_zero_percent(fraction, text):
    """Issue 14, 20: "about 0% of the current batch" while offering 64 of 512."""
    assert fact_text({"fit_fraction": fraction}, "fit_fraction") == text
