"""What the guard costs, measured side by side in one run.

1. Wall time of the same small Keras fit with and without ``%%gpuguard`` in one IPython shell,
   as the median of each round's ratio (target at most 1.02) beside the ratio of the plain fit
   run twice (the noise); and what guarding adds to a cell that does nothing (its start and
   finish).
2. CPU time the sampler thread uses per second of wall time, at the default and a fast interval.
3. The cost of the kernel's report of its state to a frontend that asked for it, per report.
   And on Keras 3 on JAX, in a process of its own (Keras chooses its backend once): what the
   compiled forecast adds before a guarded fit's first step (XLA's analysis of the step at three
   sizes), beside the same fit's time.
4. The cost of ``import ipy_gpuguard`` and of ``%load_ext ipy_gpuguard`` with the modules they
   import, in fresh processes (target under 150 ms, no framework).

Run with ``make bench`` (or ``.venv/bin/python bench/overhead.py``).
"""

from __future__ import annotations

import contextlib
import io
import os
import statistics
import subprocess
import sys
import time
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("GPUGUARD_SIMULATE", "8GiB")

from IPython.core.interactiveshell import InteractiveShell

from ipy_gpuguard.telemetry import FrameworkAllocators, Sampler, open_backend

SETUP = """
import numpy as np, keras
keras.utils.set_random_seed(0)
x = np.random.default_rng(0).normal(size=(16384, 32)).astype("float32")
y = (x.sum(axis=1) > 0).astype("float32")
model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(256, activation="relu"), keras.layers.Dense(1)])
model.compile(optimizer="adam", loss="mse")
model.fit(x, y, batch_size=256, epochs=1, verbose=0)  # warm up: tracing, first allocations
"""
FIT = "history = model.fit(x, y, batch_size=64, epochs=3, verbose=0)\n"


def fit_ratios(rounds: int = 21) -> tuple[float, list[float], list[float]]:
    """Each round runs the plain fit, the same fit again, and the guarded fit, back to back
    (in turn first); returns the plain fit's median time, the guarded over the plain, and the
    plain again over the plain (the noise floor), per round.

    The machine's speed drifts by more than the guard costs: medians of separate runs moved by
    7% between two runs of this script. So each round's runs are divided by that round's plain
    run, and the same fit run twice says how much of a ratio is noise.
    """
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "ipy_gpuguard")
    assert shell.run_cell(SETUP).success
    cells = [FIT, FIT + "# the same fit again\n", "%%gpuguard\n" + FIT]
    took: dict[str, list[float]] = {cell: [] for cell in cells}
    for round_ in range(rounds):
        for cell in cells[round_ % 3 :] + cells[: round_ % 3]:
            with contextlib.redirect_stdout(io.StringIO()):  # the guard's summary line
                start = time.perf_counter()
                assert shell.run_cell(cell).success
                took[cell].append(time.perf_counter() - start)
    plain, again, guarded = (took[cell] for cell in cells)
    return (
        statistics.median(plain),
        [g / p for p, g in zip(plain, guarded, strict=True)],
        [a / p for p, a in zip(plain, again, strict=True)],
    )


def quartiles(ratios: list[float]) -> str:
    low, median, high = statistics.quantiles(ratios, n=4)
    return f"{median:.3f} (quartiles {low:.3f}-{high:.3f})"


def cell_start_and_finish_ms(rounds: int = 31) -> float:
    """What guarding adds to a cell that does nothing: its start and its finish, in ms."""
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "ipy_gpuguard")
    extra = []
    for _ in range(rounds):
        took = []
        for cell in ("x = 1", "%%gpuguard\nx = 1"):
            with contextlib.redirect_stdout(io.StringIO()):
                start = time.perf_counter()
                shell.run_cell(cell)
                took.append(time.perf_counter() - start)
        extra.append((took[1] - took[0]) * 1000)
    return statistics.median(extra)


def sampler_cpu_per_wall_second(interval_s: float, seconds: float = 5.0) -> float:
    """The sampler thread's own CPU clock (``time.thread_time``, read on that thread) per wall second."""
    backend = open_backend(os.environ["GPUGUARD_SIMULATE"])
    stamps: list[tuple[float, float]] = []
    sampler = Sampler(
        backend,
        FrameworkAllocators("CPU"),
        [0],
        interval_s,
        listener=lambda _sample: stamps.append((time.thread_time(), time.perf_counter())),
    )
    sampler.start()
    time.sleep(seconds)
    sampler.stop()
    (cpu_first, wall_first), (cpu_last, wall_last) = stamps[0], stamps[-1]
    return (cpu_last - cpu_first) / (wall_last - wall_first)


def report_cost_us(rounds: int = 2000) -> float:
    """One report of the kernel's state to a frontend that asked (issue 38), as the sampler's
    thread sends it: the record of a guarded cell on 8 GPUs encoded, and packed into a comm
    message as ipykernel's session does (sockets aside). At most one a second while a cell runs."""
    from jupyter_client.session import Session

    from ipy_gpuguard.protocol import DeviceState, KernelState, RunningCell
    from ipy_gpuguard.shell.comm import ActionsComm

    session = Session()

    class PackingComm:
        comm_id = "bench"

        def send(self, data: object) -> None:
            session.serialize(session.msg("comm_msg", {"comm_id": self.comm_id, "data": data}))

        def on_msg(self, callback: object) -> None:
            """The bench sends nothing to the kernel."""

        on_close = on_msg

    devices = tuple(
        DeviceState(i, "NVIDIA H100", False, 1 << 30, 80 << 30, 1 << 29, 50, 60, f"GPU-{i}")
        for i in range(8)
    )
    state = KernelState(
        pid=1, kernel_id="k", updated_at=time.time(), running=True,
        cell=RunningCell("c", 1, "model.fit(x, y)"), phase="fit", step=10,
        last_step_at=time.time(), devices=devices, last_rule_id=None, outcome=None, host="gpu-node",
    )  # fmt: skip
    comm = ActionsComm(lambda: None)  # type: ignore[arg-type, return-value]
    comm.opened(PackingComm(), {"content": {"data": {"renders": ["card"], "reports": ["state"]}}})
    started = time.perf_counter()
    for _ in range(rounds):
        comm.report(state)
    return (time.perf_counter() - started) / rounds * 1e6


def import_cost_ms(statement: str, repeats: int = 5) -> tuple[float, str]:
    probe = (
        "import time, sys\nimport IPython\nfrom IPython.core.interactiveshell import InteractiveShell\n"
        "ip = InteractiveShell.instance()\nstart = time.perf_counter()\n"
        f"{statement}\n"
        "elapsed = (time.perf_counter() - start) * 1000\n"
        "heavy = [m for m in ('tensorflow', 'keras', 'torch', 'jax', 'pynvml') if m in sys.modules]\n"
        "print(elapsed, ','.join(heavy) or 'none')"
    )
    runs = []
    for _ in range(repeats):
        out = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True
        ).stdout.split()
        runs.append((float(out[0]), out[1]))
    return statistics.median(ms for ms, _ in runs), runs[0][1]


def compiled_forecast_cost() -> str:
    """Run in a process with ``KERAS_BACKEND=jax``: the bench's fit, then the guard's compiled
    forecast of it, 3 times each. The first forecast compiles the step at its sizes (the first
    guarded fit of a model pays it, before its first step); XLA keeps what it compiled, so a
    later guarded fit of the same model pays the lowering alone (the median). Beside it, the
    first forecast of fresh models built alike, compiled with XLA's defaults and for analysis
    only (:data:`~ipy_gpuguard.retry.compiled_step.ANALYSIS_ONLY`), in turn first."""
    import keras

    from ipy_gpuguard.retry import compiled_step

    start = time.perf_counter()
    model, x, y, namespace = _fitted_model()  # imports Keras and JAX, compiles Keras' own step
    setup = time.perf_counter() - start
    fits, forecasts = [], []
    for _ in range(3):
        start = time.perf_counter()
        exec(FIT, namespace)
        fits.append(time.perf_counter() - start)
        forecasts.append(_forecast_seconds(model, x, y))
    fit, first, later = statistics.median(fits), forecasts[0], statistics.median(forecasts)
    analysis_only = dict(compiled_step.ANALYSIS_ONLY)
    firsts: dict[str, list[float]] = {"defaults": [], "analysis only": []}
    for round_ in range(4):
        order = ("defaults", "analysis only")[:: 1 if round_ % 2 else -1]
        for options in order:
            compiled_step.ANALYSIS_ONLY = analysis_only if options == "analysis only" else {}
            firsts[options].append(_forecast_seconds(*_fitted_model()[:3]))
    compiled_step.ANALYSIS_ONLY = analysis_only
    defaults, only = (statistics.median(firsts[k]) for k in ("defaults", "analysis only"))
    return (
        f"Keras {keras.__version__} on JAX, the same fit: {fit:.3f} s (the setup: Keras and JAX "
        f"imported, a first fit that compiles Keras' step, {setup:.3f} s); the compiled forecast before its "
        f"first step: first {first:.3f} s ({first / fit:.1%} of the fit), later {later:.3f} s "
        f"({later / fit:.1%}); a fresh model's first, median of 4: compiled with XLA's defaults "
        f"{defaults:.3f} s, for analysis only {only:.3f} s ({only / defaults:.2f} of it)"
    )


def _fitted_model() -> tuple[Any, Any, Any, dict[str, Any]]:
    """The bench's model, data and namespace, after the setup's fit."""
    namespace: dict[str, Any] = {}
    exec(SETUP, namespace)
    return namespace["model"], namespace["x"], namespace["y"], namespace


def _forecast_seconds(model: Any, x: Any, y: Any) -> float:
    """The guard's compiled forecast of the bench's fit at batch 64, on a device of 8 GiB."""
    from ipy_gpuguard.retry.compiled_step import step_need_bytes
    from ipy_gpuguard.retry.forecast import compiled_line

    start = time.perf_counter()
    compiled_line(lambda size: step_need_bytes(model, x, y, size), 64, 8 << 30)
    return time.perf_counter() - start


def main() -> None:
    if sys.argv[1:] == ["--compiled-forecast"]:
        print(compiled_forecast_cost())
        return
    plain, guarded, again = fit_ratios()
    print(f"Keras fit, plain: {plain:.3f} s (median of 21 rounds)")
    print(f"  guarded over plain, per round: {quartiles(guarded)} (target <= 1.02)")
    print(f"  the same plain fit over plain, per round (noise): {quartiles(again)}")
    print(f"a guarded cell's start and finish: {cell_start_and_finish_ms():.1f} ms (median of 31)")
    for interval in (0.5, 0.1):
        share = sampler_cpu_per_wall_second(interval)
        print(
            f"sampler CPU per wall second at --interval {interval}: {share * 1000:.2f} ms/s ({share:.2%} of a core)"
        )
    jax = subprocess.run(
        [sys.executable, __file__, "--compiled-forecast"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "KERAS_BACKEND": "jax"},
    )
    print(jax.stdout.strip())
    report = report_cost_us()
    print(
        f"the kernel's report to a frontend that asked: {report:.0f} us each, at most one a second "
        f"while a guarded cell runs ({report / 1e6:.3%} of its time)"
    )
    for label, statement in (
        ("import ipy_gpuguard", "import ipy_gpuguard"),
        ("%load_ext ipy_gpuguard", "ip.run_line_magic('load_ext', 'ipy_gpuguard')"),
    ):
        ms, heavy = import_cost_ms(statement)
        print(
            f"{label}: {ms:.1f} ms (median of 5 fresh processes, IPython already imported); frameworks imported: {heavy}"
        )


if __name__ == "__main__":
    main()
