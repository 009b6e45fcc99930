"""The forecast's arithmetic: a line in the batch size, read so that it errs small."""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from ipy_gpuguard.record.forecast import Basis, Growth
from ipy_gpuguard.retry.forecast import (
    COMPILED_CHECKS,
    HEADROOM,
    MEASURED_REACH,
    MemoryLine,
    compiled_line,
    forecast_from_line,
    project_growth,
)

MiB = 1 << 20


def test_the_line_through_two_compiled_sizes_is_exact_for_a_linear_step():
    line = MemoryLine.through({64: 100 * MiB + 64 * MiB, 256: 100 * MiB + 256 * MiB})
    assert line == MemoryLine(100 * MiB, MiB)
    assert line.peak_at(128) == 228 * MiB


def test_no_line_through_one_size_or_through_memory_that_does_not_grow():
    assert MemoryLine.through({64: 10}) is None
    assert MemoryLine.through({64: 10, 128: 10}) is None


def test_the_largest_batch_keeps_the_headroom_below_the_capacity():
    line = MemoryLine(100 * MiB, MiB)
    capacity = 1024 * MiB
    largest = line.largest_batch(capacity)
    usable = (capacity - 100 * MiB) * (1 - HEADROOM)  # of what the weights leave
    assert line.peak_at(largest) - 100 * MiB <= usable < line.peak_at(largest + 1) - 100 * MiB
    assert MemoryLine(2048 * MiB, MiB).largest_batch(capacity) == 0


@given(
    fixed=st.integers(0, 4096),
    per_sample=st.integers(1, 64),
    counted=st.floats(0.0, 1.0),
    batch=st.integers(1, 512),
)
def test_a_measured_line_that_misses_some_of_the_fixed_part_errs_small(
    fixed, per_sample, counted, batch
):
    """Counting only part of the fixed memory (the variables, not the program's buffers)
    puts the rest into each sample: measured at a size that fits, the largest batch can only
    come out smaller."""
    truth = MemoryLine(fixed * MiB, per_sample * MiB)
    capacity = 8192 * MiB
    assume(truth.peak_at(batch) <= capacity * (1 - HEADROOM))
    seen = MemoryLine.measured(batch, truth.peak_at(batch), int(counted * fixed * MiB))
    assert seen is not None
    assert seen.largest_batch(capacity) <= truth.largest_batch(capacity)


class Compiled:
    """XLA's need of a step at each batch size: a line that jumps by ``jump`` above ``at``, as
    XLA lays a buffer out otherwise for larger batches; counts what it was asked."""

    def __init__(self, fixed: int, per_sample: int, jump: int = 0, at: int = 0) -> None:
        self.fixed, self.per_sample, self.jump, self.at = fixed, per_sample, jump, at
        self.asked: list[int] = []

    def __call__(self, batch: int) -> int:
        self.asked.append(batch)
        return self.fixed + self.per_sample * batch + (self.jump if batch > self.at else 0)


def test_a_linear_step_is_checked_once_at_the_largest_batch_and_confirmed():
    need = Compiled(100 * MiB, MiB)
    line, largest = compiled_line(need, 64, 1024 * MiB)
    assert line == MemoryLine(100 * MiB, MiB)
    assert largest == line.largest_batch(1024 * MiB)
    assert need.asked == [32, 64, largest]


def test_no_size_above_the_samples_is_asked_of_xla():
    """A small model on a few samples: the line promises millions, and Keras would make no
    batch larger than the samples."""
    need = Compiled(MiB, 1024)
    _, largest = compiled_line(need, 32, 1024 * MiB, most=64)
    assert largest == 64
    assert need.asked == [16, 32, 64]


def test_memory_that_jumps_above_the_cells_batch_is_found_by_checking_the_largest():
    """The recommender of the compiled bench: a line through two small sizes promised 45% more
    than XLA's own largest batch."""
    need = Compiled(250 * MiB, MiB // 20, jump=123 * MiB, at=300)
    capacity = 512 * MiB
    unchecked = MemoryLine.through({64: need(64), 128: need(128)})
    assert need(unchecked.largest_batch(capacity)) > capacity  # what the line alone said
    _, largest = compiled_line(need, 128, capacity)
    assert largest > 128
    assert need(largest) <= capacity


def test_memory_that_jumps_between_half_the_batch_and_the_batch_is_checked_below_it():
    """Where XLA lays the step out otherwise between half the cell's batch and the batch, the
    line through them passes under the need just above the jump: its largest batch, below the
    cell's, was given unchecked and needed 9.1 GiB of 8 (found by the property below)."""
    need = Compiled(0, 3013 * 1024, jump=1554 * MiB, at=1506)
    capacity = 8192 * MiB
    line, largest = compiled_line(need, 3012, capacity)
    assert need(line.largest_batch(capacity)) > capacity  # what the line alone said
    assert 0 < largest < 3012
    assert need(largest) <= capacity


@given(
    fixed=st.integers(0, 2048),
    per_sample=st.integers(1, 4096),
    jump=st.integers(0, 4096),
    at=st.integers(1, 100_000),
    batch=st.integers(2, 4096),
)
def test_the_compiled_largest_batch_never_needs_more_than_the_device(
    fixed, per_sample, jump, at, batch
):
    """Whatever the jump, the answer is a size XLA itself put within the capacity (confirmed,
    or the cell's own), asked of it at most :data:`COMPILED_CHECKS` times above the cell's."""
    need = Compiled(fixed * MiB, per_sample * 1024, jump * MiB, at)
    capacity = 8192 * MiB
    made = compiled_line(need, batch, capacity)
    assert made is not None
    _, largest = made
    if largest > 0:
        assert need(largest) <= capacity
    assert len(need.asked) <= 2 + COMPILED_CHECKS + (largest > 0)


def test_a_peak_that_holds_no_more_than_the_variables_gives_no_line():
    assert MemoryLine.measured(64, 100 * MiB, 100 * MiB) is None


def test_the_forecast_says_whether_the_cells_batch_fits_and_gives_its_fields():
    forecast = forecast_from_line(MemoryLine(0, 10 * MiB), 1024, 8192 * MiB, Basis.COMPILED, 0)
    assert not forecast.fits  # 10 GiB against 8
    assert forecast_from_line(MemoryLine(0, 8 * MiB), 1024, 8192 * MiB, Basis.COMPILED, 0).fits
    assert forecast.largest_batch == int(8192 * (1 - HEADROOM) // 10)
    data = forecast.as_data()
    assert data["basis"] == "compiled"
    assert data["step"] == 0
    assert data["peak_bytes"] == 10 * 1024 * MiB
    assert data["fills_at_epoch"] is None


def test_a_measured_line_reaches_no_further_than_a_few_times_its_batch():
    """A contrastive loss's memory grows with the square of the batch: its line through batch
    256 promised 241,633 where 10,000 ran out of memory."""
    line = MemoryLine.measured(256, 4 * MiB, 3 * MiB)
    far = forecast_from_line(line, 256, 512 * MiB, Basis.MEASURED, 2)
    assert line.largest_batch(512 * MiB) > 100 * 256
    assert (far.largest_batch, far.beyond_reach) == (MEASURED_REACH * 256, True)
    assert far.as_data()["beyond_reach"] is True
    near = forecast_from_line(line, 256, 8 * MiB, Basis.MEASURED, 2)
    assert (near.largest_batch, near.beyond_reach) == (line.largest_batch(8 * MiB), False)
    compiled = forecast_from_line(MemoryLine(0, MiB / 1024), 256, 512 * MiB, Basis.COMPILED, 0)
    assert not compiled.beyond_reach  # XLA was asked at its largest batch: no line to trust
    assert compiled.largest_batch > MEASURED_REACH * 256


def test_memory_that_grows_every_epoch_is_projected_to_the_epoch_that_fills_the_device():
    held = [100 * MiB, 280 * MiB, 460 * MiB, 640 * MiB]  # 180 MiB an epoch
    growth = project_growth(held, 700 * MiB, 8192 * MiB, epochs=60)
    assert growth == Growth(180 * MiB, 4 + (8192 - 700) // 180 + 1)
    assert project_growth(held, 700 * MiB, 8192 * MiB, epochs=30) == Growth(180 * MiB, None)


def test_growth_is_named_only_when_steady_and_within_the_run():
    assert project_growth([100, 200, 150, 300], 300, 1000, None) is None  # fell once
    assert project_growth([100, 200, 300], 300, 1000, None) is None  # too few epochs
    assert project_growth([100, 101, 102, 103], 103, 10**9, epochs=10) == Growth(1, None)
