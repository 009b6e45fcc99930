"""The forecaster's readings, with the allocator's answers given: what it reads when, and what
it does with a peak it cannot know."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest

from ipy_gpuguard.cards.forecast_words import forecast_lines
from ipy_gpuguard.record.forecast import Basis, Capacity, Forecast, Unforeseen
from ipy_gpuguard.retry.fit_forecast import MEASURED_AFTER, FitForecaster, samples_alike
from ipy_gpuguard.retry.forecast import MEASURED_HEADROOM
from ipy_gpuguard.watchdog.progress import StepRecorder

MiB = 2**20


class Model:
    """A model of no framework and no weights."""

    trainable_weights = ()


def fit(forecaster: FitForecaster, steps: StepRecorder, model: Model, samples: int = 1024) -> None:
    """A fit of ``samples`` at 64 as the heartbeat tells it: its first steps' ends."""
    forecaster.fit_began(model, {"x": np.zeros((samples, 8)), "batch_size": 64}, samples // 64)
    for step in range(1, MEASURED_AFTER + 1):
        steps.step()
        forecaster.step_ended(model, step)


def peak_of_the_steps(steps: StepRecorder, peak_bytes: int) -> Callable[[], int]:
    """The allocator's peak since the cell began: nothing before the fit's first step."""
    return lambda: peak_bytes if steps.steps else 0


def test_the_capacity_is_read_as_the_fit_begins_when_the_allocator_is_set_up():
    """JAX sets up its pool (75% of the GPU, or its memory fraction) when the cell first uses
    it: a capacity read as the cell starts would be the device's whole memory."""
    capacity: dict[str, Capacity | None] = {"bytes": None}
    steps = StepRecorder()
    forecaster = FitForecaster(
        lambda: capacity["bytes"],
        read_peak=peak_of_the_steps(steps, 200 * MiB),
        read_held=lambda: 10 * MiB,
    )
    capacity["bytes"] = Capacity(1024 * MiB)  # the pool, set up by the person's first arrays
    model = Model()
    fit(forecaster, steps, model)
    forecast = forecaster.look()
    assert forecast is not None
    assert forecast.basis is Basis.MEASURED
    assert forecast.capacity_bytes == 1024 * MiB
    per_sample = (200 - 10) * MiB / 64
    assert forecast.largest_batch == int((1024 - 10) * MiB * (1 - MEASURED_HEADROOM) // per_sample)


def test_the_fixed_part_is_what_the_allocator_holds_between_steps_without_the_gradients():
    """Where activations outweigh the weights, a step peaks as its backward pass begins: every
    activation held, no gradient made yet. Counting the gradients in the fixed part would put
    too little in each sample, and the largest batch would run out of memory (a deep MLP's did,
    4.9% above the largest batch that trained)."""

    class Wide(Model):
        trainable_weights = (np.zeros((2048, 2048), np.float32),)  # 16 MiB of gradients a step

    steps = StepRecorder()
    forecaster = FitForecaster(
        lambda: Capacity(512 * MiB),
        read_peak=peak_of_the_steps(steps, 100 * MiB),
        read_held=lambda: 20 * MiB,
    )
    fit(forecaster, steps, Wide())
    forecast = forecaster.look()
    assert forecast is not None
    per_sample = (100 - 20) * MiB / 64
    assert forecast.largest_batch == int((512 - 20) * MiB * (1 - MEASURED_HEADROOM) // per_sample)


def test_what_other_processes_hold_is_read_with_the_capacity_and_said():
    """The capacity is the GPU less another kernel's memory: the forecast says why it is less
    than the device, and what to free."""
    steps = StepRecorder()
    capacity = Capacity(0)
    forecaster = FitForecaster(
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
        lambda: Capacity(2048 * MiB), read_peak=lambda: None, read_held=lambda: 10 * MiB
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
        lambda: Capacity(2048 * MiB), read_peak=lambda: peaks[-1], read_held=lambda: 10 * MiB
    )
    fit(forecaster, steps, Model())
    assert forecaster.look() is None
    peaks.append(300 * MiB)  # JAX's mark rose past the earlier cell's
    assert forecaster.look() is not None
    assert forecaster.unforeseen is None


def test_no_device_memory_and_data_that_batches_itself_are_said_not_guessed():
    no_device = FitForecaster(lambda: None, lambda: MiB, lambda: MiB)
    no_device.fit_began(Model(), {"x": np.zeros((64, 8)), "batch_size": 8}, 8)
    assert no_device.unforeseen is Unforeseen.NO_DEVICE
    dataset = FitForecaster(lambda: Capacity(2048 * MiB), lambda: MiB, lambda: MiB)
    dataset.fit_began(Model(), {"x": iter(())}, None)
    assert dataset.unforeseen is Unforeseen.DATA_BATCHES_ITSELF
    assert all(forecast_lines(None, reason) for reason in Unforeseen)  # each has its words


def test_an_error_of_the_guards_that_stops_the_forecast_is_said_in_one_line():
    def misread() -> int:
        raise ValueError("the bindings misread the device\nsecond line\nthird line")

    steps = StepRecorder()
    forecaster = FitForecaster(
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
        lambda: Capacity(256 * MiB), read_peak=lambda: peaks[-1], read_held=lambda: 10 * MiB
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
        lambda: Capacity(2048 * MiB), peak_of_the_steps(steps, 200 * MiB), lambda: 10 * MiB
    )
    model = Model()
    forecaster.fit_began(model, {"x": np.zeros((1024, 8)), "batch_size": 64}, 16)
    steps.step()
    forecaster.step_ended(model, 1)  # then it raised
    assert forecaster.look() is None
    assert forecaster.unforeseen is None  # while the cell runs, it may yet be made
    forecaster.cell_ended()
    assert forecaster.unforeseen is Unforeseen.ENDED_EARLY


def test_a_fit_whose_allocator_cannot_be_read_says_so_not_that_it_ended_early():
    forecaster = FitForecaster(lambda: Capacity(2048 * MiB), lambda: None, lambda: None)
    fit(forecaster, StepRecorder(), Model())
    assert forecaster.look() is None
    forecaster.cell_ended()
    assert forecaster.unforeseen is Unforeseen.PEAK_UNKNOWN


def test_the_peak_is_the_second_steps_not_what_came_after_it():
    """Read when the sampler next looks, the cell's peak held a validation run's (88 times the
    step's, for a large validation set), a callback's tensors, or a later fit's steps."""
    peaks = [0]
    forecaster = FitForecaster(
        lambda: Capacity(2048 * MiB), lambda: peaks[-1], read_held=lambda: 10 * MiB
    )
    model = Model()
    forecaster.fit_began(model, {"x": np.zeros((1024, 8)), "batch_size": 64}, 16)
    peaks.append(100 * MiB)
    forecaster.step_ended(model, 1)
    forecaster.step_ended(model, 2)
    peaks.append(1800 * MiB)  # the validation at the epoch's end, before the sampler looked
    forecast = forecaster.look()
    assert forecast is not None
    assert forecast.peak_bytes == 100 * MiB
    assert forecast.step == MEASURED_AFTER


def test_a_later_fit_of_the_cell_is_no_part_of_the_first_fits_forecast():
    peaks = [0]
    forecaster = FitForecaster(
        lambda: Capacity(2048 * MiB), lambda: peaks[-1], read_held=lambda: 10 * MiB
    )
    first, later = Model(), Model()
    forecaster.fit_began(first, {"x": np.zeros((16, 8)), "batch_size": 16}, 1)
    peaks.append(MiB)
    forecaster.step_ended(first, 1)
    forecaster.fit_ended(first)  # one step an epoch, one epoch
    forecaster.fit_began(later, {"x": np.zeros((1024, 8)), "batch_size": 512}, 2)
    peaks.append(900 * MiB)
    forecaster.step_ended(later, 1)
    forecaster.step_ended(later, 2)
    assert forecaster.look() is None
    forecaster.cell_ended()
    assert forecaster.unforeseen is Unforeseen.ENDED_EARLY


def test_numpy_integers_are_the_batch_and_the_epochs_they_say():
    held = [10 * MiB]
    forecaster = FitForecaster(
        lambda: Capacity(2048 * MiB), lambda: 200 * MiB if held[1:] else 0, lambda: held[-1]
    )
    model = Model()
    arguments = {"x": np.zeros((1024, 8)), "batch_size": np.int64(64)}
    forecaster.fit_began(
        model, {**arguments, "epochs": np.int64(10), "initial_epoch": np.int64(6)}, 16
    )
    held.append(10 * MiB)
    forecaster.step_ended(model, 1)
    forecaster.step_ended(model, 2)
    for epoch in range(6, 10):
        held.append(held[-1] + MiB)
        forecaster.epoch_ended(model, epoch)
    forecast = forecaster.look()
    assert forecast is not None
    assert forecast.batch_size == 64
    assert forecast.growth is not None
    assert forecast.growth.fills_at_epoch is None  # four epochs of 1 MiB fill nothing


def growing_fit(
    forecaster: FitForecaster, steps: StepRecorder, model: Model, **arguments: object
) -> None:
    forecaster.fit_began(model, {"x": np.zeros((64, 8)), "batch_size": 64, **arguments}, 1)
    for step in (1, 2):
        steps.step()
        forecaster.step_ended(model, step)


def test_growth_is_projected_in_keras_numbering_over_the_epochs_this_fit_runs():
    """``initial_epoch=8, epochs=12`` runs four epochs, numbered 9 to 12 by Keras."""
    held = [10 * MiB]
    steps = StepRecorder()
    forecaster = FitForecaster(
        lambda: Capacity(100 * MiB), peak_of_the_steps(steps, 20 * MiB), lambda: held[-1]
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
        lambda: Capacity(40 * MiB), peak_of_the_steps(steps, 20 * MiB), lambda: held[-1]
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
        lambda: Capacity(40 * MiB), peak_of_the_steps(steps, 20 * MiB), lambda: held[-1]
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


def test_an_epoch_that_ends_between_the_first_two_steps_leaves_the_first_steps_peak():
    """One step an epoch: the epoch's validation runs between the first two steps, and its
    peak (80 times the step's, for a large validation set) is no part of the step."""
    peaks = [0]
    forecaster = FitForecaster(lambda: Capacity(256 * MiB), lambda: peaks[-1], lambda: MiB)
    model = Model()
    forecaster.fit_began(model, {"x": np.zeros((16, 8)), "batch_size": 16, "epochs": 3}, 1)
    peaks.append(2 * MiB)
    forecaster.step_ended(model, 1)
    peaks.append(18 * MiB)  # the validation at the first epoch's end
    forecaster.epoch_ended(model, 0)
    forecaster.step_ended(model, 2)
    forecast = forecaster.look()
    assert forecast is not None
    assert forecast.peak_bytes == 2 * MiB


def test_a_fit_a_callback_ran_before_the_first_step_ended_leaves_the_peak_unknown():
    """The person's callbacks run before the guard's at a step's end: a fit one of them starts
    there is in the peak of the first step too."""
    peaks = [0]
    forecaster = FitForecaster(lambda: Capacity(256 * MiB), lambda: peaks[-1], lambda: MiB)
    outer, inner = Model(), Model()
    arguments = {"x": np.zeros((1024, 8)), "batch_size": 16}
    forecaster.fit_began(outer, arguments, 64)
    forecaster.fit_began(inner, arguments, 64)  # from the person's on_train_batch_end
    peaks.append(50 * MiB)
    forecaster.step_ended(inner, 1)
    forecaster.step_ended(inner, 2)
    forecaster.fit_ended(inner)
    forecaster.step_ended(outer, 1)
    forecaster.step_ended(outer, 2)
    assert forecaster.look() is None
    forecaster.cell_ended()
    assert forecaster.unforeseen is Unforeseen.OTHER_WORK


def test_a_fit_whose_arguments_could_not_be_read_says_so_not_that_its_data_batches_itself():
    forecaster = FitForecaster(lambda: Capacity(256 * MiB), lambda: MiB, lambda: MiB)
    forecaster.fit_began(None, {}, None)  # a CallbackList the person built without a model
    assert forecaster.unforeseen is Unforeseen.FIT_UNREAD


@pytest.mark.tensorflow
def test_a_keras_model_measured_on_another_frameworks_allocator_has_no_forecast():
    """TensorFlow imported for ``tf.data`` beside Keras on JAX: the allocator the guard reads is
    TensorFlow's, which holds none of the step. The model's trainer says which it trains in."""
    import keras

    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])  # TensorFlow's here
    arrays = {"x": np.zeros((64, 8)), "batch_size": 8}
    elsewhere = FitForecaster(
        lambda: Capacity(2048 * MiB), lambda: MiB, lambda: MiB, read_allocator=lambda: "JAX"
    )
    elsewhere.fit_began(model, arrays, 8)
    assert elsewhere.unforeseen is Unforeseen.OTHER_ALLOCATOR
    own = FitForecaster(
        lambda: Capacity(2048 * MiB), lambda: MiB, lambda: MiB, read_allocator=lambda: "TensorFlow"
    )
    own.fit_began(model, arrays, 8)
    assert own.unforeseen is None
    assert own.error is None

    class Odd(type):
        @property
        def __mro__(cls):  # a class of the person's answers nothing the guard asks
            raise RuntimeError("the person's")

    class Persons(metaclass=Odd):
        __module__ = property(lambda self: "keras.src.backend.jax.trainer")  # type: ignore[assignment]

    odd = FitForecaster(
        lambda: Capacity(2048 * MiB), lambda: MiB, lambda: MiB, read_allocator=lambda: "JAX"
    )
    odd.fit_began(Persons(), arrays, 8)
    assert odd.error is None
    assert odd.unforeseen is None


@pytest.mark.tensorflow
def test_a_compiled_forecast_never_projects_growth_from_another_frameworks_allocator(monkeypatch):
    """Keras on JAX compiles its forecast before the first step; with TensorFlow imported for
    ``tf.data``, what the guard reads at each epoch's end is TensorFlow's allocator (a cache
    that grows there), none of the fit's."""
    import keras

    from ipy_gpuguard.retry import fit_forecast

    monkeypatch.setattr(fit_forecast, "keras_on_jax", lambda model: True)  # as on JAX
    monkeypatch.setattr(fit_forecast, "keras_only", lambda model: True)
    monkeypatch.setattr(fit_forecast, "step_need_bytes", lambda m, x, y, size: MiB * (1 + size))
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
    held = [10 * MiB]
    forecaster = FitForecaster(
        lambda: Capacity(100 * MiB),
        lambda: 20 * MiB,
        lambda: held[-1],
        read_allocator=lambda: "JAX",
    )
    forecaster.fit_began(model, {"x": np.zeros((64, 8)), "batch_size": 16, "epochs": 30}, 4)
    assert forecaster.forecast is not None  # compiled: no allocator read
    for step in (1, 2):
        forecaster.step_ended(model, step)
    for epoch in range(6):
        held.append(held[-1] + 8 * MiB)
        forecaster.epoch_ended(model, epoch)
    forecast = forecaster.look()
    assert forecast is not None
    assert forecast.growth is None


def test_arrays_of_texts_or_objects_have_samples_of_different_sizes():
    numbers = np.zeros((4, 3), "float32")
    assert samples_alike(numbers)
    assert samples_alike({"image": numbers, "label": np.arange(4)})
    assert not samples_alike(np.array(["short", "a much longer text"]))
    assert not samples_alike([numbers, np.array([[1], [2, 3]], dtype=object)])
    assert not samples_alike(np.array([b"bytes", b"more bytes"]))
    # NumPy's kind "V" holds bfloat16 and float8 (ml_dtypes) as well as records: one size each
    assert samples_alike(np.zeros(4, dtype=[("pixel", "f4"), ("label", "i4")]))


def test_a_forecast_beyond_its_reach_says_more_may_fit():
    forecast = Forecast(256, 4 << 20, 512 << 20, 2048, Basis.MEASURED, 2, beyond_reach=True)
    (line,) = forecast_lines(forecast)
    assert line.endswith(
        "at batch 256; batch 2048 fits (8× this one), and more may: a line through one batch "
        "size tells no further."
    )


def test_the_largest_batch_is_at_most_the_samples_the_fit_trains_on():
    """Keras makes no batch larger than the samples it trains on: a line that promises more
    says that a batch of every one of them fits."""
    steps = StepRecorder()
    forecaster = FitForecaster(
        lambda: Capacity(8 << 30),
        read_peak=peak_of_the_steps(steps, 20 * MiB),
        read_held=lambda: 10 * MiB,
    )
    fit(forecaster, steps, Model(), samples=100)
    forecast = forecaster.look()
    assert forecast is not None
    assert forecast.batch_size == 64
    assert (forecast.largest_batch, forecast.every_sample_fits) == (100, True)
    assert not forecast.beyond_reach
    assert forecast.as_data()["every_sample_fits"] is True
    (line,) = forecast_lines(forecast)
    assert line.endswith("at batch 64; a batch of every sample it trains on (100) fits.")


def test_a_largest_batch_below_the_samples_is_left_as_it_is():
    steps = StepRecorder()
    forecaster = FitForecaster(
        lambda: Capacity(512 * MiB),
        read_peak=peak_of_the_steps(steps, 200 * MiB),
        read_held=lambda: 10 * MiB,
    )
    fit(forecaster, steps, Model())
    forecast = forecaster.look()
    assert forecast is not None
    assert forecast.largest_batch is not None
    assert forecast.largest_batch < 1024
    assert not forecast.every_sample_fits


@pytest.mark.parametrize("samples", [10, 1002, 1000])
def test_a_compiled_forecast_over_replicas_says_every_sample_fits(monkeypatch, samples):
    """Four replicas split the cell's batch: a device takes at most a quarter of the samples,
    rounded up; rounded down, the words said "the largest batch that fits ≈ 8" of 10 samples
    whose line reaches millions."""
    from ipy_gpuguard.retry import fit_forecast

    monkeypatch.setattr(fit_forecast, "keras_on_jax", lambda model: True)  # as on JAX
    monkeypatch.setattr(fit_forecast, "keras_only", lambda model: True)
    monkeypatch.setattr(fit_forecast, "replicas_of", lambda model: 4)
    monkeypatch.setattr(fit_forecast, "step_need_bytes", lambda m, x, y, size: MiB + 1024 * size)
    forecaster = FitForecaster(lambda: Capacity(8 << 30), lambda: 0, lambda: 0)
    arrays = {"x": np.zeros((samples, 8), "float32"), "y": np.zeros(samples), "batch_size": 32}
    forecaster.fit_began(Model(), arrays, None)
    forecast = forecaster.forecast
    assert forecast is not None
    assert (forecast.largest_batch, forecast.every_sample_fits) == (samples, True)
