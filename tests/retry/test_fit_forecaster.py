"""The forecaster's readings, with the allocator's answers given: what it reads when, and what
it does with a peak it cannot know."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ipy_gpuguard.cards.forecast_words import forecast_lines
from ipy_gpuguard.record.forecast import Basis, Capacity, Unforeseen
from ipy_gpuguard.retry.fit_forecast import MEASURED_AFTER, FitForecaster
from ipy_gpuguard.watchdog.progress import StepRecorder

MiB = 2**20


class Model:
    """A model of no framework and no weights."""

    trainable_weights = ()


def fit(forecaster: FitForecaster, steps: StepRecorder, model: Model) -> None:
    forecaster.fit_began(model, {"x": np.zeros((1024, 8)), "batch_size": 64}, 16)
    steps.step()
    forecaster.first_step_ended(model)
    for _ in range(MEASURED_AFTER - 1):
        steps.step()


def test_the_capacity_is_read_as_the_fit_begins_when_the_allocator_is_set_up():
    """JAX sets up its pool (75% of the GPU, or its memory fraction) when the cell first uses
    it: a capacity read as the cell starts would be the device's whole memory."""
    capacity: dict[str, Capacity | None] = {"bytes": None}
    steps = StepRecorder()
    forecaster = FitForecaster(
        steps, lambda: capacity["bytes"], read_peak=lambda: 200 * MiB, read_held=lambda: 10 * MiB
    )
    capacity["bytes"] = Capacity(2048 * MiB)  # the pool, set up by the person's first arrays
    model = Model()
    fit(forecaster, steps, model)
    forecast = forecaster.look()
    assert forecast is not None
    assert forecast.basis is Basis.MEASURED
    assert forecast.capacity_bytes == 2048 * MiB
    per_sample = (200 - 10) * MiB / 64
    assert forecast.largest_batch == int((2048 - 10) * MiB * 0.92 // per_sample)


def test_the_fixed_part_is_what_the_allocator_holds_between_steps_without_the_gradients():
    """Where activations outweigh the weights, a step peaks as its backward pass begins: every
    activation held, no gradient made yet. Counting the gradients in the fixed part would put
    too little in each sample, and the largest batch would run out of memory (a deep MLP's did,
    4.9% above the largest batch that trained)."""

    class Wide(Model):
        trainable_weights = (np.zeros((2048, 2048), np.float32),)  # 16 MiB of gradients a step

    steps = StepRecorder()
    forecaster = FitForecaster(
        steps,
        lambda: Capacity(2048 * MiB),
        read_peak=lambda: 100 * MiB,
        read_held=lambda: 20 * MiB,
    )
    fit(forecaster, steps, Wide())
    forecast = forecaster.look()
    assert forecast is not None
    per_sample = (100 - 20) * MiB / 64
    assert forecast.largest_batch == int((2048 - 20) * MiB * 0.92 // per_sample)


def test_what_other_processes_hold_is_read_with_the_capacity_and_said():
    """The capacity is the GPU less another kernel's memory: the forecast says why it is less
    than the device, and what to free."""
    steps = StepRecorder()
    capacity = Capacity(0)
    forecaster = FitForecaster(
        steps, lambda: capacity, read_peak=lambda: 200 * MiB, read_held=lambda: 10 * MiB
    )
    capacity = Capacity(2048 * MiB, held_by_others_bytes=6144 * MiB)  # as the fit begins
    fit(forecaster, steps, Model())
    forecast = forecaster.look()
    assert forecast is not None
    assert forecast.held_by_others_bytes == 6144 * MiB
    assert forecast.as_data()["held_by_others_bytes"] == 6144 * MiB
    (line,) = forecast_lines(forecast)
    assert "peak 200 MiB of 2.00 GiB (other processes hold another 6.00 GiB) at batch 64" in line
    (alone,) = forecast_lines(replace(forecast, held_by_others_bytes=0))
    assert "other processes" not in alone


def test_a_peak_the_allocator_cannot_tell_makes_no_forecast():
    """JAX's high-water mark counts from the start of the process: until the cell passes it the
    peak is unknown, and the bytes in use between steps miss the step's temporaries; a line
    through them would put a crash's batch in the forecast."""
    steps = StepRecorder()
    forecaster = FitForecaster(
        steps, lambda: Capacity(2048 * MiB), read_peak=lambda: None, read_held=lambda: 10 * MiB
    )
    fit(forecaster, steps, Model())
    assert forecaster.look() is None
    assert forecaster.error is None
    assert forecaster.unforeseen is Unforeseen.PEAK_UNKNOWN
    (said,) = forecast_lines(None, forecaster.unforeseen)
    assert said.startswith("No forecast for the last guarded fit: the allocator could not tell")


def test_a_peak_read_later_in_the_fit_makes_the_forecast_and_forgets_why_there_was_none():
    peaks: list[int | None] = [None]
    steps = StepRecorder()
    forecaster = FitForecaster(
        steps, lambda: Capacity(2048 * MiB), read_peak=lambda: peaks[-1], read_held=lambda: 10 * MiB
    )
    fit(forecaster, steps, Model())
    assert forecaster.look() is None
    peaks.append(300 * MiB)  # JAX's mark rose past the earlier cell's
    assert forecaster.look() is not None
    assert forecaster.unforeseen is None


def test_no_device_memory_and_data_that_batches_itself_are_said_not_guessed():
    no_device = FitForecaster(StepRecorder(), lambda: None, lambda: MiB, lambda: MiB)
    no_device.fit_began(Model(), {"x": np.zeros((64, 8)), "batch_size": 8}, 8)
    assert no_device.unforeseen is Unforeseen.NO_DEVICE
    dataset = FitForecaster(StepRecorder(), lambda: Capacity(2048 * MiB), lambda: MiB, lambda: MiB)
    dataset.fit_began(Model(), {"x": iter(())}, None)
    assert dataset.unforeseen is Unforeseen.DATA_BATCHES_ITSELF
    assert all(forecast_lines(None, reason) for reason in Unforeseen)  # each has its words


def test_an_error_of_the_guards_that_stops_the_forecast_is_said_in_one_line():
    def misread() -> int:
        raise ValueError("the bindings misread the device\nsecond line\nthird line")

    steps = StepRecorder()
    forecaster = FitForecaster(
        steps, lambda: Capacity(2048 * MiB), read_peak=lambda: 200 * MiB, read_held=misread
    )
    fit(forecaster, steps, Model())
    assert forecaster.look() is None
    assert forecaster.error == "ValueError: the bindings misread the device"
