"""The memory forecast against a real GPU: Keras 3 on JAX and on PyTorch (issue 37).

The same table as :mod:`forecast` (TensorFlow's allocator on the CPU) and :mod:`forecast_jax`
(XLA's own figures), against the device. Each model of both zoos runs in a process of its own,
several at once, with the framework's allocator held to ``--capacity-mib`` (JAX:
``XLA_PYTHON_CLIENT_MEM_FRACTION``, read back as ``memory_stats()["bytes_limit"]``; PyTorch:
``torch.cuda.set_per_process_memory_fraction``), compiled as its backend's users get it
(``jit_compile="auto"``: XLA on JAX, eager on PyTorch). In that process:

1. a fit of 3 steps at ``--batch``, read as the guard reads a fit: the allocator's peak, and
   what it holds after the first step (first, because JAX's peak counts from
   the start of the process and cannot be reset);
2. T, the largest batch that really trains on the device: steps up or down from where that
   run's line meets the limit, each larger than the last (25% first), until the outcome changes,
   then bisection to 2%;
3. on JAX, XLA's analysis of the step at T//8 and T//4, nothing run.

The forecasts, each against T:

- **compiled** (JAX): the guard's line through XLA's step at T//8 and T//4 (a cell at T//4),
  against the allocator's limit; **compiled_nvml**: the same line against the device's whole
  memory, as the guard read it before it asked JAX for its pool;
- **measured**: the line through the run's peak, against the limit;
- **sampled** (JAX): the line through the bytes in use after each step, which is all a sampler
  sees of an allocator whose peak it cannot reset.

Run where a GPU is:  python bench/forecast_gpu.py [--backends jax,torch] [--capacity-mib 2048]
                     [--models mlp,cnn] [--jobs 8] [--max-trials 12] [--out /tmp/fg.json]
                     python bench/forecast_gpu.py --table /tmp/fg.json   (a saved run)
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout

from ipy_gpuguard.retry.forecast import MemoryLine

MiB = 2**20
#: Steps of the measured run, as in :mod:`forecast_truth`'s run at T//4.
MEASURED_STEPS = 3
#: Trials a model's bisection may take before its bracket is reported as it stands.
MAX_TRIALS = 12
#: T is known when its bracket is this narrow (or one sample).
PRECISION = 0.02
CHILD_TIMEOUT_S = 400


# -- in a model's own process ---------------------------------------------------------------


def _device_total_bytes() -> int | None:
    """The GPU's whole memory by NVML, read before any framework takes some of it."""
    try:
        import pynvml

        pynvml.nvmlInit()
        return int(pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(0)).total)
    except Exception:
        return None


class Device:
    """The framework's view of the GPU: its allocator's limit, bytes in use and peak."""

    def __init__(self, backend: str, capacity_bytes: int, total_bytes: int | None) -> None:
        self.backend = backend
        if backend == "torch":
            import torch

            self.torch = torch
            if torch.cuda.is_available() and total_bytes:
                torch.cuda.set_per_process_memory_fraction(capacity_bytes / total_bytes)
            self.limit_bytes = capacity_bytes
        else:
            import jax

            self.jax = jax
            stats = jax.devices()[0].memory_stats() or {}
            self.stats_at_start = stats
            self.limit_bytes = int(stats.get("bytes_limit", capacity_bytes))

    def in_use(self) -> int:
        if self.backend == "torch":
            cuda = self.torch.cuda
            return int(cuda.memory_allocated()) if cuda.is_available() else 0
        return int((self.jax.devices()[0].memory_stats() or {}).get("bytes_in_use", 0))

    def peak(self) -> int:
        if self.backend == "torch":
            cuda = self.torch.cuda
            return int(cuda.max_memory_allocated()) if cuda.is_available() else 0
        return int((self.jax.devices()[0].memory_stats() or {}).get("peak_bytes_in_use", 0))

    def reset_peak(self) -> None:
        if self.backend == "torch" and self.torch.cuda.is_available():
            self.torch.cuda.reset_peak_memory_stats()

    def release(self) -> None:
        import keras

        keras.backend.clear_session()
        gc.collect()
        if self.backend == "torch":
            if self.torch.cuda.is_available():
                self.torch.cuda.empty_cache()
        else:
            self.jax.clear_caches()


def _out_of_memory(error: BaseException) -> bool:
    text = f"{type(error).__name__}: {error}"
    return "RESOURCE_EXHAUSTED" in text or "OutOfMemoryError" in text or "out of memory" in text


def _built(name: str, backend: str) -> tuple[Any, Any]:
    import keras
    from forecast_zoo import ZOO
    from forecast_zoo_held_out import HELD_OUT_ZOO

    (entry,) = [model for model in ZOO + HELD_OUT_ZOO if model.name == name]
    keras.utils.set_random_seed(0)
    model, make_data = entry.build(entry.spec)
    # The zoo compiles for TensorFlow's executor (jit_compile=False); users get "auto", which
    # Keras resolves when the attribute is unset: XLA on JAX, eager on PyTorch.
    model._jit_compile = None
    return model, make_data


def _fits(name: str, backend: str, device: Device, batch: int) -> bool:
    """A real fit of two steps at ``batch`` on the device: it trains, or runs out of memory."""
    model, make_data = _built(name, backend)
    x, y = make_data(2 * batch)
    try:
        model.fit(x, y, batch_size=batch, epochs=1, verbose=0, shuffle=False)
        return True
    except Exception as error:
        if not _out_of_memory(error):
            raise
        return False
    finally:
        del model, x, y
        device.release()


def _compiled_needs(name: str, backend: str, sizes: list[int]) -> dict[int, int]:
    """XLA's analysis of the model's step at each size, nothing run (JAX only)."""
    from ipy_gpuguard.retry.compiled_step import step_need_bytes

    model, make_data = _built(name, backend)
    x, y = make_data(64)
    model.fit(x, y, batch_size=2, epochs=1, steps_per_epoch=1, verbose=0)  # builds the state
    return {size: step_need_bytes(model, x, y, size) for size in sizes}


def bisect(
    fits: Callable[[int], bool], guess: int, max_trials: int = MAX_TRIALS
) -> tuple[int, int | None, list[list[Any]]]:
    """The bracket [largest that fitted, smallest that did not] around T, from ``guess``:
    steps away from it, each twice the last (25% first), until the outcome changes, then
    bisection."""
    trials: list[list[Any]] = []

    def trial(batch: int) -> bool:
        outcome = fits(batch)
        trials.append([batch, outcome])
        return outcome

    low, high = 0, None
    batch, step = max(guess, 1), 0.25
    while len(trials) < max_trials:
        if trial(batch):
            low = batch
            if high is not None:
                break
            batch = int(batch * (1 + step)) + 1
        else:
            high = batch
            if low > 0 or batch == 1:
                break
            batch = max(int(batch / (1 + step)), 1)
        step *= 2
    while high is not None and high - low > max(1, int(low * PRECISION)):
        if len(trials) >= max_trials:
            break
        middle = (low + high) // 2
        low, high = (middle, high) if trial(middle) else (low, middle)
    return low, high, trials


def _measured_run(name: str, backend: str, device: Device, batch: int) -> dict[str, Any]:
    """A fit of :data:`MEASURED_STEPS` steps at ``batch``, read as the guard reads it: what the
    allocator holds after the first step, its peak, and the bytes in use after each step."""
    import keras

    model, make_data = _built(name, backend)
    x, y = make_data(MEASURED_STEPS * batch)
    after_steps: list[int] = []

    class Reader(keras.callbacks.Callback):
        def on_train_batch_end(self, step: int, logs: Any = None) -> None:
            after_steps.append(device.in_use())

    device.reset_peak()
    model.fit(x, y, batch_size=batch, epochs=1, verbose=0, shuffle=False, callbacks=[Reader()])
    peak = device.peak()
    del model, x, y
    device.release()
    return {
        "batch": batch,
        "peak_bytes": peak,
        "fixed_bytes": after_steps[0],
        "in_use_after_steps": after_steps,
    }


def child(
    backend: str, name: str, capacity_mib: int, batch: int, max_trials: int
) -> dict[str, Any]:
    """One model's run at ``batch``, read as the guard reads it (first, so that the process's
    peak is that run's: JAX's cannot be reset), then T by bisection of real fits from where that
    run's line meets the limit, then (JAX) XLA's analysis of the step at T//8 and T//4."""
    total = _device_total_bytes()
    capacity = capacity_mib * MiB
    os.environ["KERAS_BACKEND"] = backend
    if backend == "jax" and total:
        os.environ["XLA_PYTHON_CLIENT_MEM_FRACTION"] = f"{capacity / total:.5f}"
    device = Device(backend, capacity, total)
    started = time.perf_counter()
    result: dict[str, Any] = {"limit_bytes": device.limit_bytes, "total_bytes": total}
    run = result["run"] = _measured_run(name, backend, device, batch)
    line = MemoryLine.measured(batch, run["peak_bytes"], run["fixed_bytes"])
    guess = 2 * batch if line is None else max(line.largest_batch(device.limit_bytes, 0.0), 2)
    low, high, trials = bisect(lambda b: _fits(name, backend, device, b), guess, max_trials)
    result.update(T=low, failed_at=high, trials=trials)
    if backend == "jax" and low >= 8:
        sizes = [low // 8, low // 4]
        needs = _compiled_needs(name, backend, sizes)
        result["compiled_needs"] = {str(size): need for size, need in needs.items()}
        result["stats_at_start"] = device.stats_at_start
    result["seconds"] = time.perf_counter() - started
    return result


# -- the driver ----------------------------------------------------------------------------


def measure(backend: str, name: str, settings: argparse.Namespace) -> dict[str, Any]:
    """One model's record, from a process of its own."""
    job = [backend, name, settings.capacity_mib, settings.batch, settings.max_trials]
    command = [sys.executable, __file__, "--child", json.dumps(job)]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    record: dict[str, Any] = {"backend": backend, "name": name}
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, env=env
        )
    except subprocess.TimeoutExpired:
        return {**record, "error": f"timed out after {CHILD_TIMEOUT_S} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return {**record, "error": done.stderr[-2000:]}
    return {**record, **json.loads(lines[-1])}


def forecasts(record: dict[str, Any]) -> dict[str, int | None]:
    """The guard's largest batches, by each reading."""
    run, limit = record["run"], record["limit_bytes"]
    made: dict[str, int | None] = {}
    if "compiled_needs" in record:
        needs = {int(size): need for size, need in record["compiled_needs"].items()}
        line = MemoryLine.through(needs)
        made["compiled"] = None if line is None else line.largest_batch(limit)
        total = record.get("total_bytes")
        made["compiled_nvml"] = None if line is None or not total else line.largest_batch(total)
    measured = MemoryLine.measured(run["batch"], run["peak_bytes"], run["fixed_bytes"])
    made["measured"] = None if measured is None else measured.largest_batch(limit)
    if record["backend"] == "jax":
        sampled = MemoryLine.measured(
            run["batch"], max(run["in_use_after_steps"]), run["fixed_bytes"]
        )
        made["sampled"] = None if sampled is None else sampled.largest_batch(limit)
    return made


def table(records: list[dict[str, Any]]) -> str:
    from forecast import error_summary, held_out

    kinds = ("compiled", "compiled_nvml", "measured", "sampled")
    rows = [
        "| backend | model | T (device) | "
        + " | ".join(f"{kind} (error)" for kind in kinds)
        + " |",
        "|---|---|---|" + "---|" * len(kinds),
    ]
    errors: dict[tuple[str, str, bool], list[float]] = {}
    for record in sorted(records, key=lambda record: (record["backend"], record["name"])):
        truth = record
        mark = " (held out)" if held_out(record["name"]) else ""
        if "error" in truth or not truth.get("T"):
            rows.append(f"| {record['backend']} | {record['name']}{mark} | failed | |")
            continue
        made = forecasts(record)
        cells = []
        for kind in kinds:
            largest = made.get(kind)
            if largest is None:
                cells.append("–" if kind not in made else "none")
                continue
            error = (largest - truth["T"]) / truth["T"]
            errors.setdefault((record["backend"], kind, held_out(record["name"])), []).append(error)
            cells.append(f"{largest} ({error:+.1%})")
        above = "" if truth.get("failed_at") else " (no failure seen)"
        rows.append(
            f"| {record['backend']} | {record['name']}{mark} | {truth['T']}{above} | "
            + " | ".join(cells)
            + " |"
        )
    rows.append("")
    for (backend, kind, is_held), found in sorted(errors.items()):
        rows.append(
            error_summary(f"{backend} {kind}, {'held out' if is_held else 'tuned on'}", found)
        )
    return "\n".join(rows)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--backends", default="jax,torch")
    parser.add_argument("--capacity-mib", type=int, default=2048)
    parser.add_argument("--models", default=None)
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--max-trials", type=int, default=MAX_TRIALS)
    parser.add_argument("--batch", type=int, default=64, help="the measured run's batch size")
    parser.add_argument("--out", type=Path, default=Path("/tmp/forecast_gpu.json"))
    parser.add_argument("--table", type=Path, help="a saved run's records, not a new run")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(*json.loads(args.child))), flush=True)
        return
    # Keras reads its backend once, at import: the zoo's and the table's imports must not choose
    # TensorFlow's (forecast_truth names it for the CPU bench), which a GPU machine may not have.
    os.environ["KERAS_BACKEND"] = args.backends.split(",")[0]
    import keras  # noqa: F401

    if args.table:
        print(table(json.loads(args.table.read_text())))
        return
    from forecast_zoo import ZOO
    from forecast_zoo_held_out import HELD_OUT_ZOO

    names = args.models.split(",") if args.models else [m.name for m in ZOO + HELD_OUT_ZOO]
    jobs = [(backend, name) for backend in args.backends.split(",") for name in names]
    started = time.perf_counter()
    records: list[dict[str, Any]] = []
    with ThreadPoolExecutor(args.jobs) as pool:
        running = [pool.submit(measure, backend, name, args) for backend, name in jobs]
        for done in as_completed(running):
            record = done.result()
            records.append(record)
            args.out.write_text(json.dumps(records, indent=1))
            truth = record
            print(
                f"{record['backend']} {record['name']}: T {truth.get('T')}, "
                f"{len(truth.get('trials', []))} trials, {truth.get('error', '')[-300:]}",
                flush=True,
            )
    print(table(records))
    print(f"{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
