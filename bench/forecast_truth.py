"""The true largest batch of each model of :mod:`forecast_zoo` under a memory limit (issue 37).

The ground truth the memory forecast is judged against. TensorFlow's BFC allocator runs on the
CPU under a limit (``TF_CPU_ALLOCATOR_USE_BFC``, ``TF_CPU_BFC_MEM_LIMIT_IN_MB``), as on a GPU, and
every measurement is a fresh process: the allocator's regions, its peak and its limit are the
process's, and a failed step leaves tensors behind. A trial trains ``steps`` steps on one batch,
given to ``fit`` as a dataset that repeats it; it fits, or raises ``ResourceExhaustedError``.
Any other error is a bug of the bench and is recorded as such.

The allocator holds of the data what a GPU's holds: the batch being trained on. A person's
arrays stay in the host's memory on a GPU, but on the CPU they share the allocator: given to
``fit`` as arrays, every trial's ``steps * batch`` samples, and the batches ``tf.data`` prefetched
(as many as its autotuning chose in that run), counted against the limit, and T measured how
many samples fit the allocator beside the step (``wide_dense``: T 5,390 with its arrays in the
allocator, 7,740 with its batch alone).

T is bracketed by a batch that fits and one that does not, within ``--precision`` (2%) or one
sample. Each fitting trial also reads the allocator's peak, and the next size is aimed where a
line through the two largest fitting peaks meets the limit, so that its outcome closes the
bracket: an out-of-memory trial costs 12 s against 4 s for one that fits (BFC waits 10 s for
memory to be freed before it gives up, ``AllocatorRetry``, sometimes twice; the CPU allocator is
built with fixed options, and no environment variable turns the wait off), and a bisection
from 1 would run out of memory about half the time. The peaks only choose where to look: T is
what the trials at the bracket's two ends did. Once a guess has misled, the search bisects.

Operations run one at a time (``--inter-op-threads 1``): with TensorFlow's default, their order
and the peak change from run to run, and so does T (a CNN at 360 and 371 fitted in one run and
not in the next). Near T the peak is no longer the bytes the step needs: BFC hands out a free
chunk whole when it is less than twice the request, and the largest batches that fit read
about the limit whatever their size, or barely rise (442 MiB at 185, 446 at 190 for ``cnn_bn``,
which fails at 193 with 66 MiB of the limit unused).

At T//4 a run of 3 steps records what a forecast starts from: the allocator's peak (reset just
before ``fit``), the bytes in use before it (weights, optimizer slots, what TensorFlow holds)
and the bytes of the weights, trainable weights and optimizer variables. The batch is in the
allocator when the peak is reset, and not yet when the bytes in use are read (``data_bytes``:
the batch's size).

The default limit, 512 MiB, holds the largest fixed part of the zoo (the recommender's tables
and their Adam slots, 196 MiB, about 300 with their gradients) with room for a batch, and puts
T between 190 and 7,692. Trials run in processes forked from a server that has imported
TensorFlow and Keras but run no operation, so the allocator is created, and the limit read, in
each trial (4 s saved a trial; a fresh interpreter's peak was the same within 1 KiB). The
whole run took 22 minutes on two cores.

The allocator's memory is one region, as on a GPU whose framework reserves it at the start
(TensorFlow's default, JAX's preallocation). With ``--growth`` BFC grows it region by region
instead, as TensorFlow's GPU allocator does with memory growth on (``set_memory_growth``,
``TF_FORCE_GPU_ALLOW_GROWTH``), except that on the CPU it never gives a free region back and
tries again, which on a GPU it does before it reports out of memory: the CPU's is the worse
case.

Run: .venv/bin/python bench/forecast_truth.py [/tmp/fz/truth.json] [--limit-mb 512]
     [--models mlp,cnn] [--linearity lstm,cnn_bn,transformer] [--growth]
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import statistics
import sys
import time
import traceback
from dataclasses import asdict, dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

# Before Keras is imported anywhere (the backend is chosen at import); the limit is set in each
# trial, before its first operation creates the allocator.
os.environ.update(
    TF_CPU_ALLOCATOR_USE_BFC="true",
    TF_ENABLE_ONEDNN_OPTS="0",
    TF_CPP_MIN_LOG_LEVEL="2",
    KERAS_BACKEND="tensorflow",
)

from forecast_zoo import ZOO, ZooModel
from forecast_zoo_held_out import HELD_OUT_ZOO

from ipy_gpuguard.retry.layer_outputs import largest_activation_bytes

MiB = 2**20
#: Every model the bench can measure.
MODELS = ZOO + HELD_OUT_ZOO
#: A trial that has not ended by then is stuck (the slowest took 25 s).
TRIAL_TIMEOUT_S = 600
#: The first size tried; below it the search halves.
START = 32
#: After this many trials a model's bracket is reported as it stands (``settled``: false).
MAX_TRIALS = 14


@dataclass(frozen=True)
class Job:
    """One measurement: ``steps`` training steps of ``model`` at ``batch`` under ``limit_mb``.

    ``inter_op_threads``: 1 runs the graph's operations one at a time, in the same order every
    time; 0 leaves TensorFlow's default (as many as cores), whose order changes from run to run
    and with it the peak (a CNN's at the same size: 177 to 197 MiB in three runs; 152.9 MiB,
    within 4 KiB, in three with one thread).
    """

    model: str
    batch: int
    steps: int
    limit_mb: int
    inter_op_threads: int = 1
    one_region: bool = True
    #: A fit of 3 steps at this size first, in the same process, as a person's cell at a
    #: smaller batch runs before they run it again at the forecast's (0: none).
    first_batch: int = 0


@dataclass(frozen=True)
class Trial:
    """What a trial did; ``expected`` is what the peaks predicted (None: a plain step)."""

    batch: int
    fits: bool
    peak_bytes: int | None
    seconds: float
    fit_seconds: float
    expected: bool | None


def by_name(name: str) -> ZooModel:
    """The bench's model called ``name``."""
    for model in MODELS:
        if model.name == name:
            return model
    raise KeyError(f"no model {name!r} in the zoo: {', '.join(m.name for m in MODELS)}")


def reserve(tf: Any, limit_mb: int) -> None:
    """Make the allocator's memory one region, as TensorFlow's GPU allocator does by default.

    On the CPU, BFC grows region by region (each twice the last), and a tensor cannot span two:
    a batch could fail with the limit half free (:mod:`keras_memory_search`). An empty tensor of
    nearly all of it, let go at once, makes one region that later tensors share.
    """
    held = tf.raw_ops.Empty(shape=[int(0.98 * limit_mb * MiB) // 4], dtype=tf.float32)
    del held


def _bytes(variables: Any) -> int:
    import numpy as np

    return sum(math.prod(v.shape) * np.dtype(v.dtype).itemsize for v in variables)


def _measure(job: Job) -> dict[str, Any]:
    """Train the job's model and read the allocator: runs in the trial's own process."""
    os.environ["TF_CPU_BFC_MEM_LIMIT_IN_MB"] = str(job.limit_mb)
    import keras
    import tensorflow as tf

    if job.inter_op_threads:
        tf.config.threading.set_inter_op_parallelism_threads(job.inter_op_threads)
    if job.one_region:
        reserve(tf, job.limit_mb)
    keras.utils.set_random_seed(0)
    entry = by_name(job.model)
    model, make_data = entry.build(entry.spec)
    model.optimizer.build(model.trainable_variables)
    if job.first_batch:
        _train(tf, keras, model, make_data(job.first_batch), 3)
    resident = tf.config.experimental.get_memory_info("CPU:0")["current"]
    x, y = make_data(job.batch)
    tf.config.experimental.reset_memory_stats("CPU:0")
    started = time.perf_counter()
    try:
        _train(tf, keras, model, (x, y), job.steps)
        fits = True
    except tf.errors.ResourceExhaustedError:
        fits = False
    return {
        "fits": fits,
        "fit_seconds": time.perf_counter() - started,
        "peak_bytes": tf.config.experimental.get_memory_info("CPU:0")["peak"] if fits else None,
        "resident_bytes": resident,
        "weights_bytes": _bytes(model.weights),
        "trainable_bytes": _bytes(model.trainable_weights),
        "optimizer_bytes": _bytes(model.optimizer.variables),
        "data_bytes": sum(a.nbytes for a in keras.tree.flatten((x, y))),
        "largest_tensor_bytes": largest_activation_bytes(model),
    }


def _train(tf: Any, keras: Any, model: Any, samples: Any, steps: int) -> None:
    """``steps`` training steps on one batch, the ``(x, y)`` of ``samples``, in the allocator."""
    # A tensor made of an aligned NumPy array may share its memory, outside the allocator: the
    # copy puts the batch in it every time. A list of inputs becomes a tuple: ``tf.data`` would
    # stack a list into one tensor.
    data = keras.tree.lists_to_tuples(
        tf.nest.map_structure(lambda a: tf.raw_ops.DeepCopy(x=tf.constant(a)), samples)
    )
    dataset = tf.data.Dataset.from_tensors(data).repeat()
    # ``shuffle`` means nothing for a dataset; Keras warns of it, in the middle of the table.
    model.fit(dataset, epochs=1, steps_per_epoch=steps, verbose=0, shuffle=False)


def _child(job: Job, sender: Connection) -> None:
    try:
        sender.send(_measure(job))
    except Exception:  # a bug of the bench or the zoo, reported with its trace, not a result
        sender.send({"error": traceback.format_exc()})


class TrialFailed(RuntimeError):
    """A trial that neither fitted nor ran out of memory."""


def run(job: Job, context: Any) -> dict[str, Any]:
    """The job's measurement, in a process of its own; ``seconds`` is its whole wall time."""
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(job, sender), name=f"trial {job.model}")
    started = time.perf_counter()
    child.start()
    sender.close()
    try:
        if not receiver.poll(TRIAL_TIMEOUT_S):
            child.kill()
            raise TrialFailed(f"{job}: no result after {TRIAL_TIMEOUT_S} s")
        result: dict[str, Any] = receiver.recv()
    except EOFError:
        raise TrialFailed(f"{job}: the process died") from None
    finally:
        child.join()
    if "error" in result:
        raise TrialFailed(f"{job}: {result['error']}")
    return {**result, "seconds": time.perf_counter() - started}


def bracket(trials: list[Trial]) -> tuple[int, int | None]:
    """The largest batch that fitted (0: none) and the smallest that did not (None: none)."""
    low = max((t.batch for t in trials if t.fits), default=0)
    high = min((t.batch for t in trials if not t.fits), default=None)
    return low, high


def settled(low: int, high: int | None, precision: float) -> bool:
    return high is not None and high - low <= max(1.0, precision * low)


def peak_guess(trials: list[Trial], capacity_bytes: int) -> float | None:
    """Where the line through the two largest fitting peaks meets the capacity."""
    points = sorted((t.batch, t.peak_bytes) for t in trials if t.fits and t.peak_bytes)[-2:]
    if len(points) < 2:
        return None
    (b1, p1), (b2, p2) = points
    slope = (p2 - p1) / (b2 - b1)
    return b2 + (capacity_bytes - p2) / slope if slope > 0 else None


def next_size(
    trials: list[Trial], capacity_bytes: int, precision: float
) -> tuple[int, bool | None] | None:
    """The next batch to try and what the peaks expect of it; None once T is bracketed.

    Aimed at the size whose outcome would settle the bracket: just above the guess while no
    batch has failed, else the smallest size whose fit settles it or the largest whose failure
    does. Doubling, or halving the bracket, where there is no guess, or once a guess has
    misled: the cliff then lies away from where the peaks meet the limit (a free stretch too
    short for the next tensor stops a recommender 10% below it), and aiming near the guess
    again ran out of memory six times in a row (a guess too low crept up 2% a trial).
    """
    low, high = bracket(trials)
    if settled(low, high, precision):
        return None
    guess = peak_guess(trials, capacity_bytes)
    if guess is None or any(t.expected not in (None, t.fits) for t in trials):
        return (2 * low if high is None else (low + high) // 2), None
    if high is None:
        size = min(max(math.ceil(guess * (1 + precision / 2)), low + 1), 4 * low)
    elif guess >= (down := math.ceil(high / (1 + precision))):
        size = down
    elif guess <= (up := math.floor(low * (1 + precision))):
        size = up
    else:
        size = math.floor(guess)
    size = min(max(size, low + 1), high - 1) if high is not None else size
    return size, size <= guess


@dataclass(frozen=True)
class Bench:
    """The run's settings, and the server that its trials are forked from."""

    limit_mb: int
    precision: float
    inter_op_threads: int
    context: Any
    one_region: bool = True

    def measure(self, model: str, batch: int, steps: int, first_batch: int = 0) -> dict[str, Any]:
        job = Job(
            model, batch, steps, self.limit_mb, self.inter_op_threads, self.one_region, first_batch
        )
        return run(job, self.context)

    def trial(self, model: str, batch: int, expected: bool | None, first_batch: int = 0) -> Trial:
        """A trial of 2 steps, as the search makes them (after a fit at ``first_batch``)."""
        result = self.measure(model, batch, 2, first_batch)
        fits, seconds = result["fits"], result["seconds"]
        print(f"  {model} {batch}: {'fits' if fits else 'OOM'} {seconds:.1f} s", file=sys.stderr)
        return Trial(batch, fits, result["peak_bytes"], seconds, result["fit_seconds"], expected)


def bench_for(
    limit_mb: int, precision: float = 0.02, inter_op_threads: int = 1, one_region: bool = True
) -> Bench:
    """A bench whose trials are forked from a server that has imported TensorFlow, Keras and
    the zoos."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["tensorflow", "keras", "forecast_zoo", "forecast_zoo_held_out"])
    return Bench(limit_mb, precision, inter_op_threads, context, one_region)


def largest_batch(bench: Bench, model: str) -> tuple[int, bool, list[Trial]]:
    """T, whether its bracket settled within ``MAX_TRIALS``, and the trials."""
    trials, capacity = [bench.trial(model, START, None)], bench.limit_mb * MiB
    while len(trials) < MAX_TRIALS and (step := next_size(trials, capacity, bench.precision)):
        trials.append(bench.trial(model, *step))
    low, high = bracket(trials)
    return low, settled(low, high, bench.precision), trials


#: What a run at T//4 reads besides the peak.
READINGS = (
    "resident_bytes",
    "weights_bytes",
    "trainable_bytes",
    "optimizer_bytes",
    "data_bytes",
    "largest_tensor_bytes",
)


def record(bench: Bench, model: str, linear: bool) -> dict[str, Any]:
    """One model's line of the JSON file: T, its trials and the readings at T//4."""
    started = time.perf_counter()
    largest, done, trials = largest_batch(bench, model)
    quarter = bench.measure(model, max(largest // 4, 1), 3)
    line: dict[str, Any] = {
        "name": model,
        "family": by_name(model).family,
        "limit_mb": bench.limit_mb,
        "T": largest,
        "settled": done,
        "trials": [asdict(t) for t in trials],
        "quarter_batch": max(largest // 4, 1),
        "peak_at_quarter": quarter["peak_bytes"],
        **{k: quarter[k] for k in READINGS},
    }
    if linear:
        eighth, half = (bench.measure(model, largest // d, 3) for d in (8, 2))
        line["linearity"] = [
            {"batch": largest // d, "peak_bytes": r["peak_bytes"], "data_bytes": r["data_bytes"]}
            for d, r in ((8, eighth), (4, quarter), (2, half))
        ]
    return {**line, "seconds": time.perf_counter() - started}


def line_through(points: list[tuple[int, int]]) -> tuple[float, float, float]:
    """Least squares: slope (bytes a sample), intercept (bytes) and the largest residual as a
    fraction of its peak."""
    slope, intercept = statistics.linear_regression(*zip(*points, strict=True))
    worst = max(abs(p - (intercept + slope * b)) / p for b, p in points)
    return slope, intercept, worst


def linearity(line: dict[str, Any]) -> str:
    points = [(p["batch"], p["peak_bytes"]) for p in line["linearity"]]
    slope, intercept, worst = line_through(points)
    fixed = line["weights_bytes"] + line["optimizer_bytes"]
    return (
        f"{line['name']:15} peaks {', '.join(f'{b}: {p / MiB:.1f}' for b, p in points)} MiB; "
        f"{slope / 1024:.1f} KiB a sample, intercept {intercept / MiB:.1f} MiB "
        f"(weights + optimizer {fixed / MiB:.1f}, in use before fit "
        f"{line['resident_bytes'] / MiB:.1f}), worst residual {worst:.1%}"
    )


def table(lines: list[dict[str, Any]]) -> str:
    rows = [
        f"{'model':15} {'family':11} {'T':>5} {'trials':>6} {'OOM':>3} {'peak@T/4':>8} "
        f"{'weights':>7} {'optim':>6} {'before':>6} {'s':>4}   (MiB)"
    ]
    for line in lines:
        if "error" in line:
            rows.append(f"{line['name']:15} {line['family']:11} error: {line['error'][-200:]}")
            continue
        trials = line["trials"]
        oom = sum(not t["fits"] for t in trials)
        rows.append(
            f"{line['name']:15} {line['family']:11} {line['T']:>5}{'' if line['settled'] else '?'} "
            f"{len(trials):>6} {oom:>3} {(line['peak_at_quarter'] or 0) / MiB:8.1f} "
            f"{line['weights_bytes'] / MiB:7.1f} {line['optimizer_bytes'] / MiB:6.1f} "
            f"{line['resident_bytes'] / MiB:6.1f} {line['seconds']:4.0f}"
        )
    return "\n".join(rows)


def timings(lines: list[dict[str, Any]]) -> str:
    trials = [t for line in lines for t in line.get("trials", [])]
    parts = []
    for name, fits in (("fitting", True), ("out of memory", False)):
        chosen = [t for t in trials if t["fits"] == fits]
        if chosen:
            whole = statistics.median(t["seconds"] for t in chosen)
            fit = statistics.median(t["fit_seconds"] for t in chosen)
            parts.append(f"{len(chosen)} {name} trials: median {whole:.1f} s ({fit:.1f} s in fit)")
    return "; ".join(parts)


def measured(bench: Bench, name: str, linear: bool) -> dict[str, Any]:
    """A model's record, or what went wrong with it: the other models still run."""
    try:
        return record(bench, name, linear)
    except TrialFailed as error:
        return {"name": name, "family": by_name(name).family, "error": str(error)}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default="/tmp/fz/truth.json", type=Path)
    parser.add_argument("--limit-mb", type=int, default=512)
    parser.add_argument("--precision", type=float, default=0.02)
    parser.add_argument("--inter-op-threads", type=int, default=1, help="0: TensorFlow's")
    parser.add_argument("--models", type=lambda s: s.split(","), default=[m.name for m in MODELS])
    parser.add_argument("--linearity", type=lambda s: s.split(","), default=[])
    parser.add_argument(
        "--growth",
        action="store_true",
        help="let the allocator grow region by region, as TensorFlow's GPU allocator does with "
        "memory growth on (by default its memory is one region, as a GPU's is without it)",
    )
    args = parser.parse_args(argv)
    bench = bench_for(args.limit_mb, args.precision, args.inter_op_threads, not args.growth)
    settings = {
        "limit_mb": bench.limit_mb,
        "precision": bench.precision,
        "inter_op_threads": bench.inter_op_threads,
        "start": START,
        "one_region": bench.one_region,
    }
    started, lines = time.perf_counter(), []
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for name in args.models:
        lines.append(measured(bench, name, name in args.linearity))
        args.out.write_text(json.dumps({"settings": settings, "models": lines}, indent=1))
    print(
        f"BFC allocator on the CPU, limit {args.limit_mb} MiB, T within {args.precision:.0%}, "
        f"{args.inter_op_threads or 'default'} inter-op threads; "
        f"{time.perf_counter() - started:.0f} s in all"
    )
    print(table(lines))
    print(timings(lines))
    for line in lines:
        if "linearity" in line:
            print(linearity(line))


if __name__ == "__main__":
    main(sys.argv[1:])
