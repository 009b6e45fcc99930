"""The forecaster's readings, with the allocator's answers given: what it reads when, and what
it does with a peak it cannot know."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from ipy_gpuguard.cards.forecast_words import forecast_lines
from ipy_gpuguard.record.forecast import Basis, Capacity, Unforeseen
from ipy_gpuguard.retry.fit_forecast import MEASURED_AFTER, FitForecaster
from ipy_gpuguard.watchdog.progress import TRAINING, StepRecorder

MiB = 2**20


class Model:
    """A model of no framework and no weights."""

    trainable_weights = ()


def fit(forecaster: FitForecaster, steps: StepRecorder, model: Model) -> None:
    steps.begin_phase(TRAINING)  # as the heartbeat does as fit begins
    forecaster.fit_began(model, {"x": np.zeros((1024, 8)), "batch_size": 64}, 16)
    steps.step()
    forecaster.first_step_ended(model)
    for _ in range(MEASURED_AFTER - 1):
        steps.step()


def peak_of_the_steps(steps: StepRecorder, peak_bytes: int) -> Callable[[], int]:
    """The allocator's peak since the cell began: nothing before the fit's first step."""
    return lambda: peak_bytes if steps.training_steps else 0


def test_the_capacity_is_read_as_the_fit_begins_when_the_allocator_is_set_up():
    """JAX sets up its pool (75% of the GPU, or its memory fraction) when the cell first uses
    it: a capacity read as the cell starts would be the device's whole memory."""
    capacity: dict[str, Capacity | None] = {"bytes": None}
    steps = StepRecorder()
    forecaster = FitForecaster(
        steps,
        lambda: capacity["bytes"],
        read_peak=peak_of_the_steps(steps, 200 * MiB),
        read_held=lambda: 10 * MiB,
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
        read_peak=peak_of_the_steps(steps, 100 * MiB),
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
        steps,
        lambda: capacity,
        read_peak=peak_of_the_steps(steps, 200 * MiB),
        read_held=lambda: 10 * MiB,
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
        steps,
        lambda: Capacity(2048 * MiB),
        read_peak=peak_of_the_steps(steps, 200 * MiB),
        read_held=misread,
    )
    fit(forecaster, steps, Model())
    assert forecaster.look() is None
    assert forecaster.error == "ValueError: the bindings misread the device"


def test_a_cell_that_peaked_before_its_fit_says_so_rather_than_forecast_from_that_peak():
    """The allocator's peak counts from the cell's start: a tensor the cell made and freed
    before its fit, larger than the fit's steps, would be taken for their peak (a fit that
    trained said it would run out of memory)."""
    peaks = [300 * MiB]  # a scratch tensor's, before the fit
    steps = StepRecorder()
    forecaster = FitForecaster(
        steps, lambda: Capacity(256 * MiB), read_peak=lambda: peaks[-1], read_held=lambda: 10 * MiB
    )
    fit(forecaster, steps, Model())
    assert forecaster.look() is None
    assert forecaster.unforeseen is Unforeseen.EARLIER_PEAK
    (said,) = forecast_lines(None, forecaster.unforeseen)
    assert "run the fit in a %%gpuguard cell of its own" in said
    peaks.append(301 * MiB)  # the fit's own steps passed it: the peak is theirs
    forecast = forecaster.look()
    assert forecast is not None
    assert forecast.peak_bytes == 301 * MiB


def test_a_fit_that_ended_before_its_second_step_says_so_once_the_cell_ended():
    steps = StepRecorder()
    forecaster = FitForecaster(
        steps, lambda: Capacity(2048 * MiB), peak_of_the_steps(steps, 200 * MiB), lambda: 10 * MiB
    )
    steps.begin_phase(TRAINING)
    forecaster.fit_began(Model(), {"x": np.zeros((1024, 8)), "batch_size": 64}, 16)
    steps.step()  # then it raised
    assert forecaster.look() is None
    assert forecaster.unforeseen is None  # while the cell runs, it may yet be made
    forecaster.cell_ended()
    assert forecaster.unforeseen is Unforeseen.ENDED_EARLY


def test_only_training_steps_count_towards_the_forecast():
    """A validation run inside fit steps too: its steps are not the training step's."""
    steps = StepRecorder()
    forecaster = FitForecaster(
        steps, lambda: Capacity(2048 * MiB), peak_of_the_steps(steps, 200 * MiB), lambda: 10 * MiB
    )
    model = Model()
    steps.begin_phase(TRAINING)
    forecaster.fit_began(model, {"x": np.zeros((64, 8)), "batch_size": 64}, 1)
    steps.step()
    forecaster.first_step_ended(model)
    steps.begin_phase("evaluate")
    for _ in range(5):
        steps.step()
    steps.end_phase()
    assert forecaster.look() is None
    steps.step()
    forecast = forecaster.look()
    assert forecast is not None
    assert forecast.step == MEASURED_AFTER


def growing_fit(forecaster: FitForecaster, steps: StepRecorder, model: Model, **arguments):
    steps.begin_phase(TRAINING)
    forecaster.fit_began(model, {"x": np.zeros((64, 8)), "batch_size": 64, **arguments}, 1)
    steps.step()
    forecaster.first_step_ended(model)
    steps.step()


def test_growth_is_projected_in_keras_numbering_over_the_epochs_this_fit_runs():
    """``initial_epoch=8, epochs=12`` runs four epochs, numbered 9 to 12 by Keras."""
    held = [10 * MiB]
    steps = StepRecorder()
    forecaster = FitForecaster(
        steps, lambda: Capacity(100 * MiB), peak_of_the_steps(steps, 20 * MiB), lambda: held[-1]
    )
    model = Model()
    growing_fit(forecaster, steps, model, epochs=12, initial_epoch=8)
    for epoch in range(8, 12):
        held.append(held[-1] + 4 * MiB)
        forecaster.epoch_ended(model, epoch)
    forecast = forecaster.look()
    assert forecast is not None
    assert forecast.growth is not None
    assert forecast.growth.fills_at_epoch is None  # 4 MiB an epoch fills 80 MiB in 20 more

    held[:] = [10 * MiB]
    steps = StepRecorder()
    forecaster = FitForecaster(
        steps, lambda: Capacity(40 * MiB), peak_of_the_steps(steps, 20 * MiB), lambda: held[-1]
    )
    growing_fit(forecaster, steps, model, epochs=30, initial_epoch=8)
    for epoch in range(8, 12):
        held.append(held[-1] + 4 * MiB)
        forecaster.epoch_ended(model, epoch)
    forecast = forecaster.look()
    assert forecast is not None
    assert forecast.growth is not None
    assert forecast.growth.fills_at_epoch == 8 + 4 + 20 // 4 + 1  # Keras' epoch 18


def test_only_the_first_fits_own_epochs_are_projected():
    """A fit a callback runs inside the first, and a later fit, have epochs of their own."""
    held = [10 * MiB]
    steps = StepRecorder()
    forecaster = FitForecaster(
        steps, lambda: Capacity(40 * MiB), peak_of_the_steps(steps, 20 * MiB), lambda: held[-1]
    )
    model = Model()
    growing_fit(forecaster, steps, model, epochs=2)
    forecaster.fit_began(model, {"x": np.zeros((64, 8)), "batch_size": 64, "epochs": 40}, 1)
    for epoch in range(6):  # the inner fit's, which would project against the first's 2 epochs
        held.append(held[-1] + 4 * MiB)
        forecaster.epoch_ended(model, epoch)
    forecaster.fit_ended(model)
    forecaster.fit_ended(model)
    forecaster.fit_began(model, {"x": np.zeros((64, 8)), "batch_size": 64, "epochs": 40}, 1)
    for epoch in range(6):  # a later fit's
        held.append(held[-1] + 4 * MiB)
        forecaster.epoch_ended(model, epoch)
    forecast = forecaster.look()
    assert forecast is not None
    assert forecast.growth is None
