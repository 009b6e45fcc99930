"""The probe search fed by TensorFlow's allocator, as on a GPU (issue 23): trials and size found.

:mod:`keras_search` makes its cliff with an impossible allocation on TensorFlow's plain CPU
allocator, which keeps no statistics: the search sees fit / no fit only, as Lightning and
accelerate do, and bisects. A GPU's allocator counts bytes, and the search's memory model reads
them. Here TensorFlow's BFC allocator runs on the CPU with a limit (``TF_CPU_ALLOCATOR_USE_BFC``,
``TF_CPU_BFC_MEM_LIMIT_IN_MB``): a layer holds ``width`` floats per sample, so memory grows with
the batch, the allocator's peak measures each probe, and a batch over the limit fails for real.
The true largest batch T is measured first, by bisection to the exact size.

Only the guard's search reads memory, so only its trials change here: Lightning's and
accelerate's are :mod:`keras_search`'s. Time is not compared: BFC retries an allocation that
failed for 10 s before it raises (TensorFlow's ``AllocatorRetry``, the GPU allocator's too), so
each out-of-memory probe costs 10 s here.

Run: .venv/bin/python bench/batch_search.py --keras --memory [--limits 100,1000]
"""

from __future__ import annotations

import gc
import math
import os
import time

LIMIT_MB = 1024
os.environ["TF_CPU_ALLOCATOR_USE_BFC"] = "true"
os.environ["TF_CPU_BFC_MEM_LIMIT_IN_MB"] = str(LIMIT_MB)
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402
from keras_search import Cell  # noqa: E402

from ipy_gpuguard.retry.search import BatchSearch, SearchSettings, Trial  # noqa: E402
from ipy_gpuguard.telemetry.framework import FrameworkAllocators  # noqa: E402

CAPACITY = LIMIT_MB * 2**20
#: The share of the allocator the per-sample floats take at the aimed-for T.
SHARE = 0.8


#: The tensors the per-sample floats are split into, each kept for the backward pass.
CHUNKS = 64


class Activations(keras.layers.Layer):
    """Keeps ``[batch, width]`` floats from the forward pass to the backward, as a model's
    activations are kept: in ``CHUNKS`` tensors, as a model's layers hold theirs.

    Many tensors, each small beside the allocator, as a real model's are. One tensor of most of
    the allocator needs one free stretch that large, which the weights and the optimizer's
    tensors split: 2,400 samples failed where 2,600 then fitted, and the true largest batch was
    not one number. Eight tensors of about 100 MB each made BFC's peak over-report: it hands
    out a free chunk whole when it is less than twice the request and within 128 MB of it
    (``kMaxInternalFragmentation``, the GPU's allocator's rule too), so a run at 88 samples
    peaked at 99.95% of the limit while 96 fitted, and the search stopped early.
    """

    def __init__(self, width: int, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.width = width
        self.seed = keras.random.SeedGenerator(1)
        # A weight the gradient reaches through every chunk, so the backward pass needs them
        # all (nothing before this layer trains), and a zero TensorFlow cannot fold away (the
        # chunks multiplied by a constant 0 were pruned from the graph). Its gradient is zero:
        # the model's training is the same as without the layer.
        self.weight = self.add_weight(shape=(), initializer="ones")
        self.zero = self.add_weight(shape=(), initializer="zeros", trainable=False)

    def call(self, x: object) -> object:
        rows, held = keras.ops.shape(x)[0], 0.0
        for _ in range(CHUNKS):
            # One chunk after the other, as layers run: each one's size waits on the last one's
            # sum. Side by side, they ran in an order that changed the peak from run to run.
            after_the_last = keras.ops.cast(held * self.zero, "int32")
            chunk = keras.random.uniform(
                (rows + after_the_last, self.width // CHUNKS), seed=self.seed
            )
            held = held + keras.ops.mean(chunk * self.weight)
        return x + held * self.zero


class MemoryCell(Cell):
    """The model of :mod:`keras_search` whose memory grows with the batch up to the limit."""

    def memory_layer(self) -> keras.layers.Layer:
        return Activations(int(SHARE * CAPACITY / 4 / self.limit))

    def measured(self, size: int) -> Trial:
        """A probe at ``size`` with the allocator's peak and the fixed part (what stays held
        after it), read as the guard reads them."""
        allocators = FrameworkAllocators("CPU")
        allocators.reset_peaks([0])
        fits = self.probe(size)
        if not fits:  # what the guard does after a failure: tensors the failed step held go
            gc.collect()  # with it, or the next probe's peak counts them (~700 MB at 1,024)
        reading = allocators.read(0)
        if not fits or reading is None:
            return Trial(size, fits)
        fixed = reading.current_bytes
        return Trial(size, fits, reading.peak_bytes, fixed_bytes=fixed)


def reserve() -> None:
    """Make the allocator's memory one region, as TensorFlow's GPU allocator does by default.

    On the CPU, BFC grows region by region (each twice the last), and a tensor cannot span two:
    a batch could fail with the limit half free. Asking for nearly all of it once, and letting
    go, makes one region that later tensors share (BFC never gives a region back).
    """
    held = tf.zeros((int(0.98 * CAPACITY) // 4,), tf.float32)
    del held


def true_largest(aim: int) -> int:
    """The largest batch that fits, to the sample: bisection by probes."""
    cell = MemoryCell(aim)
    low, high = aim // 2, 2 * aim
    assert cell.measured(low).fits, "the cliff must lie above half the aim"
    assert not cell.measured(high).fits, "the cliff must lie below twice the aim"
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if cell.measured(middle).fits else (low, middle)
    return low


def search(aim: int, start: int) -> tuple[int, int, int]:
    """The guard's search by probes from ``start``: (trials, size found, probes that failed)."""
    cell = MemoryCell(aim)
    found = BatchSearch(SearchSettings(start, find_max=True, capacity_bytes=CAPACITY))
    found.record(cell.measured(start))
    while (step := found.next_step(runs_left=64)) is not None:
        if step.size == found.largest_fitting:
            break  # the search is over: one training follows
        found.record(cell.measured(step.size))
    assert found.largest_fitting is not None
    failed = sum(not trial.fits for trial in found.trials)
    return len(found.trials), found.largest_fitting, failed


def run(aims: list[int]) -> None:
    reserve()
    print(f"BFC allocator on the CPU, limit {LIMIT_MB} MiB; trials include the start's run")
    print(
        f"{'aim':>5} {'T':>5} {'start':>6} {'found/T':>8} {'trials':>6} {'budget':>6} {'OOMs':>5}"
    )
    for aim in aims:
        started = time.perf_counter()
        largest = true_largest(aim)
        print(f"{aim:>5} {largest:>5}  (T measured in {time.perf_counter() - started:.0f} s)")
        for start in (1024, 65536, max(largest // 4, 1)):
            trials, found, failed = search(aim, start)
            budget = max(math.log2(start / largest), 0) + 4
            print(
                f"{aim:>5} {largest:>5} {start:>6} {found / largest:8.2f} {trials:>6} "
                f"{budget:6.1f} {failed:>5}"
            )
