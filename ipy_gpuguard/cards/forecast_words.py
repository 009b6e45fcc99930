"""The forecast of a fit in words: the panel's line while it trains, ``%gpuguard forecast``
and the line an out-of-memory card quotes."""

from __future__ import annotations

from ..diagnosis import Kind
from ..record.forecast import Basis, Forecast, KeptForecast, Unforeseen
from ..telemetry.units import format_bytes

_MADE = {Basis.COMPILED: "from the compiled step", Basis.MEASURED: "measured"}


def forecast_line(forecast: Forecast) -> str:
    """One sentence: what the step needs at the cell's batch, and the largest that fits."""
    when = "before the first step" if forecast.step == 0 else f"at step {forecast.step}"
    made = f"Forecast ({_MADE[forecast.basis]}, {when})"
    peak, capacity = format_bytes(forecast.peak_bytes), format_bytes(forecast.capacity_bytes)
    largest = forecast.largest_batch
    if not forecast.fits:
        would = f": batch {largest} would fit" if largest else ""
        return (
            f"{made}: this step needs {peak}, the device has {capacity}{_others(forecast)}: it "
            f"will run out of memory{would}."
        )
    if forecast.every_sample_fits:
        fits = f"; a batch of every sample it trains on ({largest}) fits"
    elif forecast.beyond_reach and largest:
        fits = (
            f"; batch {largest} fits ({largest // forecast.batch_size}× this one), and more may: "
            "a line through one batch size tells no further"
        )
    elif largest:
        fits = f"; the largest batch that fits ≈ {largest}"
    else:
        fits = "; the largest batch that fits cannot be told"
    return (
        f"{made}: peak {peak} of {capacity}{_others(forecast)} at batch "
        f"{forecast.batch_size}{fits}."
    )


def _others(forecast: Forecast) -> str:
    """Why the capacity is less than the device, where other processes hold some of it."""
    if not forecast.held_by_others_bytes:
        return ""
    return f" (other processes hold another {format_bytes(forecast.held_by_others_bytes)})"


def growth_line(forecast: Forecast) -> str | None:
    """Memory that grows from epoch to epoch, and the epoch at which it fills the device."""
    growth = forecast.growth
    if growth is None:
        return None
    rate = format_bytes(growth.bytes_per_epoch)
    if growth.fills_at_epoch is None:
        return f"Memory grows {rate} an epoch; it does not fill the device before the fit ends."
    return f"Memory grows {rate} an epoch: the device fills at epoch {growth.fills_at_epoch}."


def forecast_notes(kind: Kind, forecast: Forecast | None) -> tuple[str, ...]:
    """What an out-of-memory card quotes of the forecast the guard made before the failure."""
    if kind is not Kind.OUT_OF_MEMORY or forecast is None:
        return ()
    growth = growth_line(forecast)
    return (f"Before it failed — {forecast_line(forecast)}" + (f" {growth}" if growth else ""),)


#: Why a guarded fit has no forecast, said rather than guessed.
UNFORESEEN = {
    Unforeseen.DATA_BATCHES_ITSELF: (
        "its data batches itself (a generator, a PyDataset, or a tf.data pipeline whose batch "
        "size cannot be read), so fit is not told the batch size; give fit arrays and "
        "batch_size, or a tf.data dataset batched with .batch(n), for a forecast"
    ),
    Unforeseen.NO_DEVICE: "no GPU (nor a simulated one) whose memory is known",
    Unforeseen.PEAK_UNKNOWN: (
        "the allocator could not tell its steps' peak (none is read on this device, or JAX's, "
        "which counts from the start of the process, stayed at an earlier cell's), and the "
        "bytes held between steps miss what a step uses within it"
    ),
    Unforeseen.NO_GROWTH: "its memory did not grow with the batch, so no line can be drawn",
    Unforeseen.EARLIER_PEAK: (
        "the cell used more memory before its fit than the fit's first steps did, so their peak "
        "is unknown; run the fit in a %%gpuguard cell of its own for a forecast"
    ),
    Unforeseen.ENDED_EARLY: "it ended before its second training step",
    Unforeseen.OTHER_WORK: (
        "another fit, run by a callback of it, ran before its first step ended, so its steps' "
        "peak is unknown"
    ),
    Unforeseen.FIT_UNREAD: "the guard could not read its fit's arguments (its model was unknown)",
    Unforeseen.SAMPLES_DIFFER: (
        "its samples differ in size (texts, ragged tensors, arrays of objects), so what a step "
        "needs depends on the samples its batch holds, not on the batch size alone"
    ),
    Unforeseen.OTHER_ALLOCATOR: (
        "the allocator the guard reads is another framework's than the one Keras trains in "
        "(TensorFlow's, imported for tf.data, beside Keras on JAX), so the steps' peak is unknown"
    ),
}


def kept_forecast_lines(kept: KeptForecast | None, last_cell_fitted: bool) -> tuple[str, ...]:
    """What ``%gpuguard forecast`` prints: the last guarded fit's forecast, said to be an
    earlier cell's where the last guarded cell ran no fit the guard saw (none at all, one that
    failed before its first step, or one given a ``CallbackList`` built before the cell, whose
    steps Keras never tells the guard)."""
    if kept is None:
        return forecast_lines(None)
    lines = forecast_lines(kept.forecast, kept.unforeseen, kept.stopped)
    if last_cell_fitted:
        return lines
    cell = "an earlier cell" if kept.execution_count is None else f"In [{kept.execution_count}]"
    return (
        "The last guarded cell ran no fit the guard saw (a fit that failed before its first "
        "step, or one given a CallbackList built before its cell, is not seen); the last "
        f"guarded fit is of {cell}:",
        *lines,
    )


def forecast_lines(
    forecast: Forecast | None, unforeseen: Unforeseen | None = None, stopped: str | None = None
) -> tuple[str, ...]:
    """The lines of one fit's forecast, or why it has none; ``stopped``: the guard's own error
    that stopped the forecast before it was made."""
    if forecast is None and stopped is not None:
        return (f"No forecast for the last guarded fit: the guard's forecast stopped ({stopped}).",)
    if forecast is None and unforeseen is not None:
        return (f"No forecast for the last guarded fit: {UNFORESEEN[unforeseen]}.",)
    if forecast is None:
        return (
            "No forecast yet: the guard makes one for the first Keras fit of a %%gpuguard cell "
            "that trains on arrays or a batched tf.data dataset, once it has run two steps.",
        )
    growth = growth_line(forecast)
    return (forecast_line(forecast), *((growth,) if growth else ()))
