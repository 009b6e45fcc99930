"""A fit's memory forecast as data: what the panel, ``%gpuguard forecast`` and a card show.

Made by :mod:`ipy_gpuguard.retry.forecast` from a line of memory in the batch size.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import Enum


class Basis(str, Enum):
    """Where the forecast's line comes from."""

    COMPILED = "compiled"
    MEASURED = "measured"


class Unforeseen(str, Enum):
    """Why a guarded fit has no forecast: the guard says so rather than guess."""

    DATA_BATCHES_ITSELF = "data_batches_itself"  # a generator, a pipeline of unknown batch
    NO_DEVICE = "no_device"  # no GPU (or simulated one) whose memory is known
    PEAK_UNKNOWN = "peak_unknown"  # the allocator could not tell the steps' peak
    NO_GROWTH = "no_growth"  # memory that did not grow with the batch: no line
    EARLIER_PEAK = "earlier_peak"  # the cell peaked before its fit, higher than the fit's steps
    ENDED_EARLY = "ended_early"  # the fit ended (or failed) before its second training step
    OTHER_WORK = "other_work"  # a fit a callback ran inside it before its first step ended
    FIT_UNREAD = "fit_unread"  # the fit's arguments could not be read (its model unknown)
    OTHER_ALLOCATOR = "other_allocator"  # the allocator read is not the one Keras trains in
    SAMPLES_DIFFER = "samples_differ"  # texts, ragged rows: a step's memory follows its samples


@dataclass(frozen=True)
class Capacity:
    """The memory a fit's forecast aims under, on the device that runs out first.

    ``capacity_bytes`` is what the framework's allocator may take of it; ``held_by_others_bytes``
    what other processes hold of it, where that (not a smaller allocator limit) is what makes
    the capacity less than the device: 0 elsewhere.
    """

    capacity_bytes: int
    held_by_others_bytes: int = 0


@dataclass(frozen=True)
class Growth:
    """Memory held between epochs that grows over the run: where it fills the device."""

    bytes_per_epoch: int
    fills_at_epoch: int | None


@dataclass(frozen=True)
class Forecast:
    """What the guard foresees of one fit, as ``%gpuguard forecast --json`` gives it.

    Parameters
    ----------
    largest_batch
        The largest batch that fits, erring small; ``None`` when the forecast cannot tell
        (memory that does not grow with the batch, no line).
    step
        The training step the forecast was made at: 0 before the first one.
    held_by_others_bytes
        What other processes held of the device as the fit began, which the capacity leaves
        out: 0 where none did, or where they could not be told from this process.
    beyond_reach
        More than ``largest_batch`` may fit, but a line through the one size measured tells
        no further (:data:`~ipy_gpuguard.retry.forecast.MEASURED_REACH`).
    every_sample_fits
        ``largest_batch`` is every sample the fit trains on: a batch of all of them fits, and
        Keras makes no larger one.
    """

    batch_size: int
    peak_bytes: int
    capacity_bytes: int
    largest_batch: int | None
    basis: Basis
    step: int
    growth: Growth | None = None
    held_by_others_bytes: int = 0
    beyond_reach: bool = False
    every_sample_fits: bool = False

    @property
    def fits(self) -> bool:
        """The step at the cell's batch size fits the device (the headroom is for the sizes
        the forecast proposes, not for one that runs)."""
        return self.peak_bytes <= self.capacity_bytes

    def as_data(self) -> dict[str, object]:
        """Plain data, the fields ``--json`` names; ``fills_at_epoch`` only where memory grows."""
        data = asdict(self)
        data["basis"] = self.basis.value
        growth = data.pop("growth")
        data["growth_bytes_per_epoch"] = growth["bytes_per_epoch"] if growth else None
        data["fills_at_epoch"] = growth["fills_at_epoch"] if growth else None
        return data


@dataclass(frozen=True)
class KeptForecast:
    """What the last guarded fit left for ``%gpuguard forecast``: its forecast, or why it has
    none (``unforeseen``, or the guard's own error that ``stopped`` it), and the execution
    count of its cell, which later guarded cells without a fit do not replace."""

    forecast: Forecast | None
    unforeseen: Unforeseen | None = None
    stopped: str | None = None
    execution_count: int | None = None
