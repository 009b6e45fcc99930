"""Diagnosis reads a bounded part of any error, in time linear in it (issue 14, 3).

The bounds themselves (50 ms on a real report, 200 ms on 1 MB) are measured by
``bench/diagnose.py``; these tests fail on the super-linear behaviour that took seconds to
minutes, with ten times the bound as their limit so that a slow machine does not make them fail.
"""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from ipy_gpuguard.diagnosis import Context, Kind, diagnose
from ipy_gpuguard.diagnosis.bounded import LINE_HEAD, LINE_TAIL, TEXT_HEAD, TEXT_TAIL, bounded_text

LIMIT_S = 2.0  # ten times the bound on 1 MB
OOM = (
    "ResourceExhaustedError: OOM when allocating tensor with shape[32,1024] and type float on "
    "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc"
)
#: Pieces that the rules' patterns start or end on: runs of them are where backtracking hides.
PIECES = (
    "1", "9", "0.5", "x", " ", "\t", "[", ",", "(", "\\", "'", ":", "]", "lib", "64_", ".so",
    "GPU", "cu", "e", "-", "Xid ", "0x887a", "CUDA_ERROR_", "shape=(", "{{node ",
    "Cannot assign a device for operation ", "OOM when allocating tensor with shape[",
    "ran out of memory trying to allocate ", "Allocator (", "device:GPU:", "Incompatible shapes: [",
    "Loaded runtime CuDNN library: ", " total capacity", " free;",
)  # fmt: skip


def timed(text: str) -> float:
    start = time.perf_counter()
    diagnose(text, Context())
    return time.perf_counter() - start


def test_the_reports_that_took_minutes_are_read_in_time():
    assert timed(OOM[:60] + "1" * 16_000) < LIMIT_S  # did not finish in 60 s
    assert timed(OOM + " " + "x" * 40_000) < LIMIT_S  # 5.8 s
    assert timed(("Cannot assign a device for operation " * 30_000)[:1_000_000]) < LIMIT_S  # 18 s


def test_a_size_of_thousands_of_digits_is_no_size_and_no_crash():
    """An allocation of 16 kB of digits overflowed the float it was read into: diagnose raised."""
    for line in (
        "Allocator (GPU_0_bfc) ran out of memory trying to allocate ",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ",
    ):
        found = diagnose(line + "1" * 16_000 + " GiB", Context())
        assert found.kind is Kind.OUT_OF_MEMORY
        assert "requested_bytes" not in found.facts


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=3),
    st.integers(1_000, 1_000_000),
    st.sampled_from(["", OOM + "\n"]),
)
def test_a_megabyte_of_adversarial_text_is_read_in_time(pieces, size, prefix):
    blob = "".join(pieces) * (size // len("".join(pieces)) + 1)
    assert timed(prefix + blob[:size]) < LIMIT_S


def test_the_head_and_the_tail_of_a_long_report_are_what_is_read():
    filler = "\n".join(f"step {n}: loss 0.{n:04d}" for n in range(60_000))
    assert diagnose(OOM + "\n" + filler, Context()).kind is Kind.OUT_OF_MEMORY
    assert diagnose(filler + "\n" + OOM, Context()).kind is Kind.OUT_OF_MEMORY
    kept = bounded_text(filler)
    assert len(kept) <= TEXT_HEAD + TEXT_TAIL + 100
    assert kept.startswith("step 0:")
    assert kept.endswith("step 59999: loss 0.59999")


def test_a_long_line_keeps_its_head_and_tail():
    line = "OOM when allocating tensor with shape[" + "7," * 50_000 + "7] and type float"
    kept = bounded_text(line)
    assert len(kept) <= 2 * (LINE_HEAD + LINE_TAIL + 5)
    assert kept.startswith("OOM when allocating tensor with shape[7,7,")
    assert kept.endswith("7] and type float")


def test_a_raised_error_with_a_60_kb_blob_is_read_in_time():
    """The kernel's case: the cell replied 25 s after an OOM whose message held a blob."""
    try:
        raise RuntimeError(OOM + " payload=" + "QUJD" * 15_000)
    except RuntimeError as error:
        start = time.perf_counter()
        diagnosis = diagnose(error, Context())
        assert time.perf_counter() - start < LIMIT_S
    assert diagnosis.kind is Kind.OUT_OF_MEMORY
