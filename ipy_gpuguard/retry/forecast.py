"""The forecast of a fit's memory: what its step needs at the cell's batch size, the largest
batch that fits the device, and where memory that grows over the run fills it.

Memory of a training step is a line in the batch size: a fixed part (weights, their gradients,
the optimizer's slots, the compiled program's own buffers) and a part per sample (activations
and their gradients). Two bases give the line:

- **compiled**: XLA's analysis of the compiled step at two batch sizes, before the first step
  runs (Keras 3 on JAX);
- **measured**: the allocator's peak over the first steps at the cell's size, with what the
  allocator holds between steps (weights, the optimizer's slots) as the fixed part; the rest is
  per sample.

Every forecast errs towards the smaller batch: a line through a measured peak that puts too
little in the fixed part puts too much in each sample, which makes the largest batch smaller
as long as the measured size itself fits (extrapolating down from a size past the capacity would
err the other way); and a headroom is kept of the memory the batch may use for what the line
does not see (fragmentation, the allocator's rounding). So the measured fixed part leaves the
gradients out: where activations outweigh the weights, the step peaks as the backward pass
begins, every activation held and no gradient made yet. A deep MLP's peaks lie on a line
through 40 MiB at batch 0: 2 MiB above what the allocator held between its steps, 11 below that
and its gradients; counting them made a largest batch that ran out of memory.

A measured line also keeps the model's largest tensor free. The BFC allocator (TensorFlow's,
and XLA's on a GPU) hands out a free chunk whole when it is less than twice the request: near
the limit one request can take the whole of what is left, and the next fails with a seventh
of the memory unused (a text CNN's step, whose memory is a straight line in the batch, ran
out at 86% of a 512 MiB limit, where its 103 MiB activation took a 195 MiB chunk). So the
largest batch leaves room for one more of the largest layer output per sample.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

from ..record.forecast import Basis, Forecast, Growth

#: The share of the memory the batch may use (the capacity less the fixed part) kept free: the
#: allocator's rounding and fragmentation, which come of the step's own allocations; weights and
#: slots, allocated once, lie packed.
HEADROOM = 0.08
#: The headroom of a measured line, which also keeps the largest tensor free
#: (:meth:`MemoryLine.measured`). Its forecast is run again in the same process, where the fit
#: at the cell's smaller batch has left the allocator's free memory in pieces: there an LSTM
#: ran out of memory at its forecast under 2 GiB (2,285, where 2,200 trained; 2,464 did in a
#: fresh process), and a stacked LSTM under 512 MiB and 2 GiB (393 and 1,641; 380 and 1,600
#: trained), each needing 8-10% where 6% was kept (``bench/forecast.py --in-process``); under
#: 8 GiB the stacked LSTM ran out at 6,351 with 10% kept (6,210 trained 3 of 3, 6,281 once). In
#: a fresh process 6% was enough for all 57 forecasts of the bench (three limits).
MEASURED_HEADROOM = 0.12
#: How many times the measured batch a measured line's largest batch may be. Memory that grows
#: faster than the batch lies on no line: a contrastive loss compares every pair of a batch's
#: samples, and its line through batch 256 promised 241,633 where 10,000 ran out of memory
#: (under 512 MiB). Its square term, small at the measured batch, is 64 times that at 8 times
#: the batch, where the line has grown 8 times; a forecast from a quarter of the largest batch,
#: as the bench makes them, reaches 4 times.
MEASURED_REACH = 8
#: Epochs of steady growth a projection needs before it names the epoch that fills the device.
GROWTH_EPOCHS = 3
#: Sizes above the cell's at which the compiled forecast may ask XLA to check its largest batch.
COMPILED_CHECKS = 3


@dataclass(frozen=True)
class MemoryLine:
    """A step's memory as ``fixed_bytes + per_sample_bytes * batch``, and what its largest
    batch keeps free: ``slack_per_sample_bytes`` (the largest tensor) and ``headroom``."""

    fixed_bytes: float
    per_sample_bytes: float
    slack_per_sample_bytes: float = 0.0
    headroom: float = HEADROOM

    @classmethod
    def through(cls, needs: Mapping[int, int]) -> MemoryLine | None:
        """The line through the two largest of ``needs`` (batch size to bytes); ``None``
        when there are fewer than two, or memory does not grow with the batch."""
        sizes = sorted(needs)[-2:]
        if len(sizes) < 2:
            return None
        small, large = sizes
        per_sample = (needs[large] - needs[small]) / (large - small)
        if per_sample <= 0:
            return None
        return cls(needs[large] - per_sample * large, per_sample)

    @classmethod
    def measured(
        cls, batch: int, peak_bytes: int, fixed_bytes: int, largest_tensor_bytes: int = 0
    ) -> MemoryLine | None:
        """The line through one measured peak whose fixed part is the model's own variables;
        ``None`` when the peak holds no more than them (nothing to learn per sample).

        ``largest_tensor_bytes`` is what a sample adds to the step's largest tensor
        (:func:`.layer_outputs.largest_activation_bytes`): kept free where it is known (not 0),
        and :data:`MEASURED_HEADROOM` always.
        """
        if batch <= 0 or peak_bytes <= fixed_bytes:
            return None
        per_sample = (peak_bytes - fixed_bytes) / batch
        return cls(fixed_bytes, per_sample, max(largest_tensor_bytes, 0), MEASURED_HEADROOM)

    def peak_at(self, batch: int) -> int:
        return round(self.fixed_bytes + self.per_sample_bytes * batch)

    def largest_batch(self, capacity_bytes: int, headroom: float | None = None) -> int:
        """The largest batch whose part per sample, and its slack, stay within
        ``1 - headroom`` (the line's own unless given) of the memory the fixed part leaves;
        0 when even the fixed part does not fit."""
        kept = self.headroom if headroom is None else headroom
        usable = (capacity_bytes - self.fixed_bytes) * (1 - kept)
        return max(int(usable // (self.per_sample_bytes + self.slack_per_sample_bytes)), 0)


def forecast_from_line(
    line: MemoryLine,
    batch: int,
    capacity_bytes: int,
    basis: Basis,
    step: int,
    largest_batch: int | None = None,
) -> Forecast:
    """The forecast at ``batch``; its largest batch is the line's unless one was checked, and
    a measured line's reaches no further than :data:`MEASURED_REACH` times the batch."""
    largest = line.largest_batch(capacity_bytes) if largest_batch is None else largest_batch
    reach = MEASURED_REACH * batch if basis is Basis.MEASURED else None
    beyond_reach = reach is not None and largest > reach
    return Forecast(
        batch_size=batch,
        peak_bytes=line.peak_at(batch),
        capacity_bytes=capacity_bytes,
        largest_batch=reach if beyond_reach else largest,
        basis=basis,
        step=step,
        beyond_reach=beyond_reach,
    )


def compiled_line(
    need: Callable[[int], int], batch: int, capacity_bytes: int, most: int | None = None
) -> tuple[MemoryLine, int] | None:
    """The line through the compiled step's need at half the cell's batch and at the batch,
    and the largest batch it gives, checked: ``None`` where memory does not grow with the batch.

    XLA may lay a step out otherwise for a larger batch (a recommender's needs rose 123 MB
    between batch 256 and 512, then 0.2 MB a sample), so a line through two sizes can promise
    far too much, above the cell's batch or, where the step changes between half the batch and
    the batch, below it. The largest batch is therefore asked of XLA too, and kept where XLA's
    need there leaves at least half the headroom free; else the line through the two largest
    sizes asked gives the next, at most :data:`COMPILED_CHECKS` times. A size never confirmed
    falls back to the largest size asked that fits (the cell's own, where it does), or to 0.
    No size above ``most`` (the samples the fit trains on) is asked or given.
    """
    half = max(batch // 2, 1)
    needs = {half: need(half), batch: need(batch)}
    line = MemoryLine.through(needs)
    if line is None:
        return None

    def largest_of(through: MemoryLine) -> int:
        largest = through.largest_batch(capacity_bytes)
        return largest if most is None else min(largest, most)

    proposing, largest = line, largest_of(line)

    def confirmed() -> int:
        kept_free = HEADROOM / 2 * (capacity_bytes - proposing.fixed_bytes)
        fitting = [size for size, bytes_ in needs.items() if bytes_ <= capacity_bytes - kept_free]
        return max(fitting, default=0)

    for _ in range(COMPILED_CHECKS):
        if largest <= 0:
            break
        if largest not in needs:
            needs[largest] = need(largest)
        if confirmed() == largest:
            return line, largest
        steeper = MemoryLine.through(needs)  # through the two largest sizes asked
        if steeper is None or not confirmed() < largest_of(steeper) < largest:
            break
        proposing, largest = steeper, largest_of(steeper)
    return line, confirmed()


def project_growth(
    held_bytes: Sequence[int], peak_bytes: int, capacity_bytes: int, epochs: int | None
) -> Growth | None:
    """Where memory that grows from epoch to epoch fills the device.

    ``held_bytes`` is what the allocator held at the end of each epoch so far. Growth counts
    only when every one of the last :data:`GROWTH_EPOCHS` epochs added to it; the projection
    adds that rate to the step's peak until it reaches the capacity, within ``epochs`` when
    the fit's length is known.
    """
    recent = list(held_bytes)[-(GROWTH_EPOCHS + 1) :]
    if len(recent) <= GROWTH_EPOCHS:
        return None
    steps = [after - before for before, after in pairwise(recent)]
    if min(steps) <= 0:
        return None
    rate = sum(steps) // len(steps)
    done = len(held_bytes)
    room = capacity_bytes - peak_bytes
    fills_at = done + max(room, 0) // rate + 1
    if epochs is not None and fills_at > epochs:
        return Growth(rate, None)
    return Growth(rate, fills_at)
