"""The forecast of a guarded cell's first Keras ``fit``, made while it trains.

The heartbeat tells the :class:`FitForecaster` when the fit begins (its model and its batch
size), when its first two training steps end, and when each epoch ends. Where XLA compiles the
step (Keras 3 on JAX) and the model is Keras' own code alone, the forecast is made as the fit
begins, before the first step, from XLA's analysis of the step at the cell's batch and half of
it, checked at the largest batch they give (:mod:`.compiled_step`, :func:`.forecast.
compiled_line`). Elsewhere it is measured: what the allocator holds after the first step is the
fixed part (the first builds the optimizer's slots), and its peak as the second step ends is the
step's, read then (before a validation run, a callback's work at the epoch's end, or a later fit
of the cell could add to it) and only where it passed the cell's peak before the fit. The
sampler's thread makes the line of :mod:`.forecast` through that one point when it next looks
(:meth:`~FitForecaster.look`). What the allocator holds at the end of each epoch of the first
fit shows memory that grows over the run. Reading the model reads the shapes Keras recorded of
its graph only (:mod:`.layer_outputs`) and its own attributes (:mod:`.own_attributes`): nothing
of the person's model or data changes, and none of their code runs on the guard's account.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..record.failure import in_one_line
from ..record.forecast import Basis, Capacity, Forecast, Unforeseen
from ..watchdog.keras_hooks import STEPS_TOLD
from .compiled_step import keras_on_jax, keras_only, step_need_bytes
from .dataset_batch import dataset_batch_size, dataset_samples_alike
from .forecast import (
    MemoryLine,
    compiled_line,
    forecast_from_line,
    project_growth,
)
from .layer_outputs import largest_activation_bytes
from .measure import arrays_of, samples_of
from .own_attributes import (
    class_dict,
    classes_of,
    defined_in,
    library_attribute,
    qualified_name,
    replicas_of,
)
from .trace_guard import PersonsCode

#: The training step at whose end the allocator's peak is read: the first traces and compiles
#: the step, the second runs it as every later step will.
MEASURED_AFTER = STEPS_TOLD
#: NumPy, whose integers ``fit`` takes for its counts.
_NUMPY = frozenset({"numpy"})
#: Keras' batch size when ``fit`` is given arrays and no ``batch_size``.
KERAS_DEFAULT_BATCH = 32


@dataclass(frozen=True)
class _Fit:
    """The fit being forecast: its model, the batch one device trains on, and how many
    devices split the cell's batch."""

    model: Any
    device_batch: int
    replicas: int
    #: The allocator's peak so far in the cell as the fit began: the steps' own peak is known
    #: only once the cell's peak has passed it.
    peak_before: int | None
    #: The part of the step that does not grow with the batch, once its first step has ended:
    #: what the allocator holds between steps (the cell's earlier memory, the weights, the
    #: optimizer's slots, which the first step builds). Not the gradients: the step may peak
    #: before it makes them (:mod:`.forecast`).
    fixed_bytes: int | None
    #: The epochs this fit runs (Keras' ``epochs`` less its ``initial_epoch``), and the
    #: number Keras gives the first of them less one.
    epochs: int | None
    initial_epoch: int
    #: The allocator the guard reads is the one the model trains in: what it holds is the fit's.
    own_allocator: bool = True
    #: What a sample adds to the model's largest layer output, read with the fixed part.
    largest_tensor_bytes: int = 0
    #: The samples the fit trains on, where arrays tell (its ``x`` holds them once Keras has
    #: split off ``validation_split``): no batch is larger.
    samples: int | None = None
    #: The training steps that have ended, as far as :data:`MEASURED_AFTER`.
    steps: int = 0
    #: The allocator's peak as step :data:`MEASURED_AFTER` ended: before the validation, the
    #: callbacks' work at the epoch's end, and any later fit of the cell.
    peak_bytes: int | None = None
    #: The peak as the first step ended: the step's, where other work (an epoch's end and its
    #: validation, a fit a callback ran) came between the first and second.
    first_peak_bytes: int | None = None
    #: The training steps that had ended when other work first ran inside the fit: from
    #: then on the cell's peak may be that work's.
    other_work_after: int | None = None


class FitForecaster:
    """Forecasts the memory of the first ``fit`` of a guarded cell.

    Parameters
    ----------
    read_capacity
        The memory the allocator may take of the smallest watched device, the one that runs out
        first: read as the fit begins, when the framework has set up its allocator.
    read_peak
        The allocator's peak so far in the cell, on the fullest watched device.
    read_held
        What the allocator holds now.
    made
        Hears the forecast as soon as it is made (the panel draws it before the next step).
    read_allocator
        Whose allocator ``read_peak`` and ``read_held`` read ("TensorFlow", "JAX", "PyTorch"):
        the guard reads the one Keras trains in first, but where that one cannot be read (JAX's
        on a simulated GPU), another framework's (TensorFlow imported for ``tf.data`` beside
        Keras on JAX); ``None`` where none is read.
    """

    def __init__(
        self,
        read_capacity: Callable[[], Capacity | None],
        read_peak: Callable[[], int | None],
        read_held: Callable[[], int | None],
        made: Callable[[Forecast], None] = lambda forecast: None,
        read_allocator: Callable[[], str | None] = lambda: None,
    ) -> None:
        self._read_allocator = read_allocator
        self._read_capacity = read_capacity
        self._capacity: Capacity | None = None
        self._read_peak = read_peak
        self._read_held = read_held
        self._made = made
        self._fit: _Fit | None = None
        self._fits_seen = 0
        #: The fits begun and not yet ended: the first fit's epochs count while it runs alone
        #: (not those of a fit a callback of it calls, nor of a later fit).
        self._fits_open = 0
        #: The first fit has begun and not ended: its steps and epochs are the forecast's.
        self._first_open = False
        self._held: list[int] = []
        self.forecast: Forecast | None = None
        #: The guard's own error that stopped the forecast: said in the panel, never raised.
        self.error: str | None = None
        #: Why the cell's first fit has no forecast (yet); ``None`` before a fit, or once made.
        self.unforeseen: Unforeseen | None = None

    @property
    def fit_seen(self) -> bool:
        """A fit has begun in the cell: the forecast, or why there is none, is this cell's."""
        return self._fits_seen > 0

    def fit_began(self, model: Any, arguments: Mapping[str, Any], epoch_steps: int | None) -> None:
        """From the fit's own thread, as it begins: the first fit of the cell is forecast.
        Never raises: an error of the guard's stops the forecast and is said in the panel."""
        self._fits_seen += 1
        self._fits_open += 1
        if self._fits_seen > 1:
            self._other_work()  # a fit a callback of the first runs, or a later one
            return
        self._first_open = True
        try:
            self._begin(model, arguments)
        except Exception as error:  # the guard's own, never the person's
            self.error = in_one_line(error)

    def _begin(self, model: Any, arguments: Mapping[str, Any]) -> None:
        if "x" not in arguments:
            self.unforeseen = Unforeseen.FIT_UNREAD
            return
        if not samples_alike(arguments.get("x")):
            self.unforeseen = Unforeseen.SAMPLES_DIFFER
            return
        batch = fit_batch_size(arguments)
        if batch is None:
            self.unforeseen = Unforeseen.DATA_BATCHES_ITSELF
            return
        self._capacity = self._read_capacity()
        if self._capacity is None:
            self.unforeseen = Unforeseen.NO_DEVICE
            return
        replicas = replicas_of(model)
        epochs = _whole(arguments.get("epochs"))
        first = max(_whole(arguments.get("initial_epoch")) or 0, 0)
        own_allocator = _reads_the_allocator_of(model, self._read_allocator())
        self._fit = _Fit(
            model,
            max(batch // replicas, 1),
            replicas,
            self._read_peak(),
            None,
            None if epochs is None else epochs - first,
            first,
            own_allocator,
            samples=samples_of(arguments.get("x")),
        )
        if keras_on_jax(model) and keras_only(model):
            self._compiled(self._fit, arguments)
        if self.forecast is None and not own_allocator:
            self.unforeseen = Unforeseen.OTHER_ALLOCATOR  # a measured line would be of another's
            self._fit = None

    def _compiled(self, fit: _Fit, arguments: Mapping[str, Any]) -> None:
        """The forecast before the first step, from XLA's analysis of the step at the cell's
        batch, at half of it, and at the largest batch they give (:func:`.forecast.
        compiled_line`); not where the data batches itself."""
        x, y = arguments.get("x"), arguments.get("y")
        if samples_of(x, y) is None or fit.device_batch < 2 or self._capacity is None:
            return
        capacity = self._capacity.capacity_bytes
        # the most a device takes of the samples: a share of them, rounded up
        most = None if fit.samples is None else -(-fit.samples // fit.replicas)
        try:
            made = compiled_line(
                lambda size: step_need_bytes(fit.model, x, y, size),
                fit.device_batch,
                capacity,
                most,
            )
        except PersonsCode:
            return  # measured from the first steps instead
        if made is None:
            return
        line, largest = made
        self._publish(
            forecast_from_line(line, fit.device_batch, capacity, Basis.COMPILED, 0, largest),
            fit,
            self._capacity,
        )

    def _publish(self, forecast: Forecast, fit: _Fit, capacity: Capacity) -> None:
        """Keep the forecast of one device, in the cell's batch sizes and with what others
        held, and let the panel hear it."""
        forecast = replace(forecast, held_by_others_bytes=capacity.held_by_others_bytes)
        self.forecast = _within_samples(_in_cell_batches(forecast, fit.replicas), fit.samples)
        self._made(self.forecast)

    def fit_ended(self, model: Any) -> None:
        """A fit ran to its end (one that raised never tells)."""
        self._fits_open = max(self._fits_open - 1, 0)
        if self._fits_open == 0:
            self._first_open = False

    def cell_ended(self) -> None:
        """Once the cell has ended (and the forecast was last looked at): a fit that ended
        before its steps were read has no forecast, and says so (not the last cell's)."""
        fit = self._fit
        if fit is None or self.forecast is not None or self.error is not None:
            return
        if fit.steps < MEASURED_AFTER:
            self.unforeseen = Unforeseen.ENDED_EARLY

    def _alone(self, model: Any) -> bool:
        """The cell's first fit is running, and no other fit inside it."""
        fit = self._fit
        return fit is not None and model is fit.model and self._first_open and self._fits_open == 1

    def _other_work(self) -> None:
        """Work other than the first fit's steps ran inside it: from now on the cell's peak
        may be that work's."""
        fit = self._fit
        if fit is not None and self._first_open and fit.other_work_after is None:
            self._fit = replace(fit, other_work_after=fit.steps)

    def step_ended(self, model: Any, step: int) -> None:
        """From the fit's own thread, at the end of its first training steps: what the
        allocator holds after the first is the fixed part; its peak after the second is the
        step's. Never raises: an error of the guard's stops the forecast and is said in the
        panel."""
        fit = self._fit
        if fit is None or not self._alone(model) or self.error is not None:
            return
        try:
            if step == 1:
                held = self._read_held()
                self._fit = replace(
                    fit,
                    steps=step,
                    fixed_bytes=held,
                    largest_tensor_bytes=0 if held is None else largest_activation_bytes(model),
                    first_peak_bytes=self._read_peak(),
                )
            elif step == MEASURED_AFTER:
                self._fit = replace(fit, steps=step, peak_bytes=self._steps_peak(fit))
        except Exception as error:  # the guard's own, never the person's
            self.error = in_one_line(error)

    def _steps_peak(self, fit: _Fit) -> int | None:
        """The peak of the fit's steps as its second ends: the cell's now, or where other work
        ran after the first step, the cell's as the first ended; ``None`` where it ran before."""
        if fit.other_work_after is None:
            return self._read_peak()
        return fit.first_peak_bytes if fit.other_work_after >= 1 else None

    def epoch_ended(self, model: Any, epoch: int) -> None:
        """From the fit's own thread, inside the person's ``fit``: note what the allocator holds,
        and project it once it grows. Never raises: an error of the guard's stops the forecast
        and is said in the panel."""
        fit = self._fit
        if fit is None or not self._alone(model) or self.error is not None:
            return  # a later fit's epoch, or one of a fit inside the first
        if not fit.own_allocator:
            return  # what another framework's allocator holds is none of the fit's growth
        if fit.steps < MEASURED_AFTER:
            self._other_work()  # the epoch's validation and callbacks ran before the 2nd step
            return
        try:
            self._project(fit)
        except Exception as error:  # the guard's own, never the person's
            self.error = in_one_line(error)

    def _project(self, fit: _Fit) -> None:
        held = self._read_held()
        forecast = self.look()
        if held is None or forecast is None or self._capacity is None:
            return
        self._held.append(held)
        peak = max(self._read_peak() or 0, forecast.peak_bytes)
        growth = project_growth(self._held, peak, self._capacity.capacity_bytes, fit.epochs)
        if growth is not None and growth.fills_at_epoch is not None:  # in Keras' numbering
            growth = replace(growth, fills_at_epoch=growth.fills_at_epoch + fit.initial_epoch)
        self.forecast = replace(forecast, growth=growth)

    def look(self) -> Forecast | None:
        """From the sampler's thread: the forecast, made once the fit has run its first steps;
        ``None`` until then, or where it cannot be made (no device size, no allocator). Never
        raises: an error of the guard's stops the forecast and is said in the panel."""
        if self.error is not None:
            return self.forecast
        try:
            return self._measured()
        except Exception as error:  # the guard's own, never the person's
            self.error = in_one_line(error)
            return self.forecast

    def _measured(self) -> Forecast | None:
        fit = self._fit
        if self.forecast is not None or fit is None or self._capacity is None:
            return self.forecast
        if fit.steps < MEASURED_AFTER:
            return None
        if fit.fixed_bytes is None:
            self.unforeseen = Unforeseen.PEAK_UNKNOWN  # what it held between steps
            return None
        peak = fit.peak_bytes
        if fit.other_work_after == 0:  # a fit a callback ran before the first step ended
            self.unforeseen = Unforeseen.OTHER_WORK
            return None
        if not _past(peak, fit.peak_before) and self._alone(fit.model):
            peak = self._read_peak()  # the fit's later steps may pass the earlier peak yet
        if peak is not None and not _past(peak, fit.peak_before):
            self.unforeseen = Unforeseen.EARLIER_PEAK
            return None  # looked at again with the next sample: the fit's steps may pass it
        line = (
            None
            if peak is None
            else MemoryLine.measured(
                fit.device_batch, peak, fit.fixed_bytes, fit.largest_tensor_bytes
            )
        )
        if line is None:
            self.unforeseen = Unforeseen.PEAK_UNKNOWN if peak is None else Unforeseen.NO_GROWTH
            return None  # looked at again with the next sample: the peak may yet be read
        self.unforeseen = None
        self._publish(
            forecast_from_line(
                line, fit.device_batch, self._capacity.capacity_bytes, Basis.MEASURED, fit.steps
            ),
            fit,
            self._capacity,
        )
        return self.forecast


def fit_batch_size(arguments: Mapping[str, Any]) -> int | None:
    """The batch a ``fit`` trains on: for arrays its ``batch_size`` (or Keras' 32), at most the
    samples it trains on; for a ``tf.data`` pipeline the size its ``batch`` gives (Keras ignores
    ``batch_size`` there, :mod:`.dataset_batch`); ``None`` for other data that batches itself
    (a generator, a ``PyDataset``), whose batches are its own."""
    x = arguments.get("x")
    samples = samples_of(x)
    if samples is None:
        return dataset_batch_size(x)
    batch = _whole(arguments.get("batch_size"))
    return min(batch if batch is not None and batch > 0 else KERAS_DEFAULT_BATCH, samples)


def _within_samples(forecast: Forecast, samples: int | None) -> Forecast:
    """The forecast's largest batch, at most the samples the fit trains on: Keras makes no
    larger batch, so a line's promise past them (millions, for a small model on a few samples)
    means that every sample fits in one."""
    largest = forecast.largest_batch
    if samples is None or largest is None or largest < samples:
        return forecast
    return replace(forecast, largest_batch=samples, every_sample_fits=True, beyond_reach=False)


#: NumPy's kinds of dtype whose items stand for values of any size: objects, byte and unicode
#: strings. Not ``V``: bfloat16 and float8 (ml_dtypes) and structured records are of that
#: kind, and their items are all one size.
_UNEVEN_KINDS = frozenset("OSU")


def samples_alike(x: Any) -> bool:
    """Every sample of ``x`` (arrays, or a ``tf.data`` pipeline) takes the same memory in a
    step: none holds texts (a model that vectorises them pads each batch to its longest),
    ragged rows or objects. True for data that batches itself in code, which has no forecast
    anyway."""
    arrays = arrays_of(x)
    if arrays is None:
        return dataset_samples_alike(x)
    for array in arrays:
        if qualified_name(type(array)).endswith(".RaggedTensor"):
            return False
        dtype = library_attribute(array, "dtype")
        kind = library_attribute(dtype, "kind")  # NumPy's dtype
        name = library_attribute(dtype, "name")  # TensorFlow's DType
        if kind in _UNEVEN_KINDS or name == "string":
            return False
    return True


#: The allocator each of Keras 3's backends trains in, by the module of the trainer class every
#: Keras 3 model inherits, and the name :class:`~ipy_gpuguard.telemetry.FrameworkAllocators`
#: gives it.
_ALLOCATOR_OF_TRAINER = {
    "keras.src.backend.jax.": "JAX",
    "keras.src.backend.tensorflow.": "TensorFlow",
    "keras.src.backend.torch.": "PyTorch",
}


def _reads_the_allocator_of(model: Any, allocator: str | None) -> bool:
    """The allocator read is the one the model trains in, or none is read (the forecast then
    says the peak is unknown): a Keras 3 model's is its trainer's backend's, a Keras 2 model's
    TensorFlow's. Read from the classes' own dictionaries: no class of the person's answers."""
    if allocator is None:
        return True
    modules = [class_dict(klass).get("__module__") for klass in classes_of(model)]
    names = [module for module in modules if isinstance(module, str)]
    for prefix, trains_in in _ALLOCATOR_OF_TRAINER.items():
        if any(name.startswith(prefix) for name in names):
            return allocator == trains_in
    return allocator == "TensorFlow" or not any(
        name.startswith(("keras.", "tf_keras.", "tensorflow.")) for name in names
    )


def _past(peak: int | None, before: int | None) -> bool:
    """The peak is known and passed the cell's before the fit: it is the fit's steps' own."""
    return peak is not None and (before is None or peak > before)


def _whole(value: Any) -> int | None:
    """A whole number ``fit`` takes (a Python or a NumPy integer); ``None`` for anything else.
    Read as ``int`` reads it, and a NumPy integer as NumPy does: an ``int`` subclass's
    ``__int__`` or a ``__class__`` of the person's never runs."""
    kind = type(value)
    if issubclass(kind, bool):
        return None
    if issubclass(kind, int):
        return int.__int__(value)
    if defined_in(kind, _NUMPY) and issubclass(kind, sys.modules["numpy"].integer):
        return int(value)
    return None


def _in_cell_batches(forecast: Forecast, replicas: int) -> Forecast:
    """The forecast of one device, in the cell's (global) batch sizes."""
    if replicas == 1:
        return forecast
    largest = forecast.largest_batch
    return replace(
        forecast,
        batch_size=forecast.batch_size * replicas,
        largest_batch=None if largest is None else largest * replicas,
    )
