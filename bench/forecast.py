"""The memory forecast against the true largest batch, side by side in one run (issue 37).

For each model of :mod:`forecast_zoo`, :mod:`forecast_truth` measures the true largest batch T
under TensorFlow's BFC allocator on the CPU with a limit, and a run of 3 steps at T//4. The
forecast is then what the guard makes of that run (:class:`~ipy_gpuguard.retry.forecast.
MemoryLine` through the allocator's peak, with what the allocator held before the fit as the
fixed part, the model's largest tensor and :data:`~ipy_gpuguard.retry.forecast.
MEASURED_HEADROOM` kept free): its largest batch, its error against T, and whether it is above T
(the one error that costs a crash). Beside it, the rule before, which kept 6% free (enough for
every forecast trained in a fresh process, not for two LSTMs' trained again in the process of
the fit at T//4).

A third of the first zoo's models is held out by a hash of its name; the models of
:mod:`forecast_zoo_held_out`, added after the forecast's rule, are all held out.

Saved runs under several limits give a table for each (the truth under 2048 MiB takes about
26 minutes on two cores, under 8192 MiB 72).

T is the largest batch that fitted, bracketed to 2%: a forecast above it and below the smallest
batch that ran out of memory is undecided by the search, and is trained ``--tries`` times at
its own size, each in a fresh process. "Ran out of memory at the forecast" counts the forecasts
that did so there, or that lay at or past a size that did: the crashes.

A person who reads the forecast runs the cell again at its batch in the same kernel, where the
fit at the smaller batch has left small tensors in the allocator, between which its free memory
lies in pieces; ``--in-process`` trains each forecast once after the fit at T//4 in one process.

Run: .venv/bin/python bench/forecast.py [--models mlp,cnn] [--limit-mb 512]   (about 20 minutes)
     .venv/bin/python bench/forecast.py --truth /tmp/fz/truth.json [--truth ...] [--in-process]
     .venv/bin/python bench/forecast.py --truth ... --ceiling   (what tuning the rule can reach)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import forecast_truth
from forecast_zoo_held_out import HELD_OUT_ZOO

from ipy_gpuguard.retry.forecast import MEASURED_HEADROOM, MemoryLine


def held_out(name: str) -> bool:
    """A third of the first zoo, by a hash of the name; every model added after the rule."""
    later = any(model.name == name for model in HELD_OUT_ZOO)
    return later or hashlib.sha256(name.encode()).digest()[0] % 3 == 0


def forecast_of(model: dict[str, Any], capacity_bytes: int, headroom: float) -> int | None:
    """The guard's largest batch from the run at T//4, as its forecaster makes it (what the
    allocator held as the fit began is the fixed part), keeping ``headroom`` free."""
    line = MemoryLine.measured(
        model["quarter_batch"],
        model["peak_at_quarter"],
        model["resident_bytes"],
        model.get("largest_tensor_bytes", 0),
    )
    return None if line is None else line.largest_batch(capacity_bytes, headroom)


#: The guard's rule, and the one before it.
RULES = ((MEASURED_HEADROOM, f"{MEASURED_HEADROOM:.0%} kept free"), (0.06, "6% kept free"))


def smallest_failed(model: dict[str, Any]) -> int | None:
    """The smallest batch that ran out of memory in the search for T."""
    return min((t["batch"] for t in model["trials"] if not t["fits"]), default=None)


def undecided(models: list[dict[str, Any]], capacity_bytes: int) -> set[tuple[str, int]]:
    """The forecasts above T that the search did not decide: T is the largest batch that
    fitted, within 2%, so a forecast between it and the smallest size that failed may fit."""
    sizes = set()
    for model in models:
        for headroom, _ in RULES:
            largest = forecast_of(model, capacity_bytes, headroom)
            failed = smallest_failed(model)
            if (
                largest is not None
                and model["T"] < largest
                and (failed is None or largest < failed)
            ):
                sizes.add((model["name"], largest))
    return sizes


#: Of a forecast tried, how many of its trials fitted and how many were made.
Tried = dict[tuple[str, int], tuple[int, int]]


def table(models: list[dict[str, Any]], capacity_bytes: int, tried: Tried) -> str:
    rows = [
        f"| model | family | T | forecast from T/4 | error | {RULES[1][1]}: forecast | error |",
        "|---|---|---|---|---|---|---|",
    ]
    errors: dict[tuple[float, bool], list[float]] = {}
    outcomes: dict[tuple[float, bool], list[str]] = {}
    for model in models:
        cells = []
        for headroom, _ in RULES:
            largest = forecast_of(model, capacity_bytes, headroom)
            if largest is None:
                cells += ["none", ""]
                continue
            group = (headroom, held_out(model["name"]))
            error = (largest - model["T"]) / model["T"]
            errors.setdefault(group, []).append(error)
            verdict, outcome = above_t(model, largest, tried)
            outcomes.setdefault(group, []).append(outcome)
            cells += [str(largest), f"{error:+.1%}{verdict}"]
        mark = " (held out)" if held_out(model["name"]) else ""
        rows.append(
            f"| {model['name']}{mark} | {model['family']} | {model['T']} | {' | '.join(cells)} |"
        )
    rows.append("")
    for headroom, rule in RULES:
        for is_held, name in ((False, "tuned on"), (True, "held out")):
            group = (headroom, is_held)
            if errors.get(group):
                summary = error_summary(f"{rule}, {name}", errors[group])
                crashed, untried = (outcomes[group].count(o) for o in ("crashed", "untried"))
                rows.append(
                    f"{summary}; ran out of memory at the forecast {crashed}"
                    + (f", {untried} not tried" if untried else "")
                )
    return "\n".join(rows)


def above_t(model: dict[str, Any], largest: int, tried: Tried) -> tuple[str, str]:
    """What the table says of a forecast above T, and its outcome: "crashed" at or past a size
    that failed in the search, or in any trial of its own; "fitted" in every one; "untried";
    "" for a forecast at or below T."""
    if largest <= model["T"]:
        return "", ""
    failed = smallest_failed(model)
    if failed is not None and largest >= failed:
        return f" above (≥ {failed}, which ran out of memory)", "crashed"
    if (model["name"], largest) not in tried:
        return " above (not tried)", "untried"
    fitted, made = tried[(model["name"], largest)]
    return f" above (fitted {fitted} of {made} tries)", "fitted" if fitted == made else "crashed"


def try_forecasts(
    models: list[dict[str, Any]], limit_mb: int, one_region: bool, tries: int
) -> Tried:
    """Train each undecided forecast ``tries`` times, each in a fresh process (T itself moves
    a little from process to process), with the allocator its truth had."""
    bench = forecast_truth.bench_for(limit_mb, one_region=one_region)
    tried: Tried = {}
    for name, batch in sorted(undecided(models, limit_mb * 2**20)):
        fitted = sum(bench.trial(name, batch, None).fits for _ in range(tries))
        tried[(name, batch)] = (fitted, tries)
    return tried


def after_a_smaller_fit(models: list[dict[str, Any]], limit_mb: int, one_region: bool) -> str:
    """Each forecast of the rule trained once in the process that first ran the fit at T//4, as
    a person runs the cell again at the forecast's batch in the same kernel: what the first fit
    left in the allocator (small tensors it keeps, between which the free memory lies in pieces)
    stays."""
    bench = forecast_truth.bench_for(limit_mb, one_region=one_region)
    failed, tried = [], 0
    for model in models:
        largest = forecast_of(model, limit_mb * 2**20, MEASURED_HEADROOM)
        if largest is None:
            continue
        tried += 1
        if not bench.trial(model["name"], largest, None, model["quarter_batch"]).fits:
            failed.append(f"{model['name']} at {largest} (T {model['T']})")
    return (
        f"In the process of the fit at T/4: {tried - len(failed)} of {tried} forecasts fitted"
        + (f"; ran out of memory: {', '.join(failed)}" if failed else "")
    )


#: The share of the largest tensor kept free, and the headroom, that :func:`ceiling` tries.
SLACK_SHARES = (0.0, 0.5, 0.75, 1.0, 1.5)
HEADROOMS = (0.0, 0.04, 0.06, 0.08, 0.10, 0.12)


def ceiling(models: list[tuple[dict[str, Any], int]]) -> str:
    """How close a line through one measured peak can come: for each share of the largest
    tensor kept free and each headroom, the median error against T over every saved run and
    how many forecasts lie above T, each run's T from a fresh process. The best rule with none
    above T bounds what tuning these two numbers can reach, on the very models it is tuned on."""
    rows = ["| largest tensor kept | headroom | median error | above T |", "|---|---|---|---|"]
    for share in SLACK_SHARES:
        for headroom in HEADROOMS:
            errors = []
            for model, capacity_bytes in models:
                line = MemoryLine.measured(
                    model["quarter_batch"],
                    model["peak_at_quarter"],
                    model["resident_bytes"],
                    round(model.get("largest_tensor_bytes", 0) * share),
                )
                if line is not None:
                    largest = line.largest_batch(capacity_bytes, headroom)
                    errors.append((largest - model["T"]) / model["T"])
            above = sum(error > 0 for error in errors)
            rows.append(
                f"| {share:.0%} | {headroom:.0%} | {statistics.median(errors):+.1%} | {above} |"
            )
    return "\n".join(rows)


def error_summary(label: str, errors: list[float]) -> str:
    """A group of models' forecasts in one line: how many, the median error, how many above T."""
    return (
        f"{label}: {len(errors)} models, median error {statistics.median(errors):+.1%}, "
        f"above T {sum(error > 0 for error in errors)}"
    )


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--truth", type=Path, action="append", help="saved runs of forecast_truth, not a new one"
    )
    parser.add_argument("--limit-mb", type=int, default=512)
    parser.add_argument("--models", default=None)
    parser.add_argument(
        "--tries",
        type=int,
        default=3,
        help="trials of each forecast above T that the search did not decide (0: none)",
    )
    parser.add_argument(
        "--ceiling",
        action="store_true",
        help="print only the median error and forecasts above T of each share of the largest "
        "tensor and headroom kept, over every saved run",
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="also train each forecast once after the fit at T/4 in the same process",
    )
    args = parser.parse_args(argv)
    paths = args.truth or [Path("/tmp/fz/truth.json")]
    if args.truth is None:
        models = ["--models", args.models] if args.models else []
        forecast_truth.main([str(paths[0]), "--limit-mb", str(args.limit_mb), *models])
    truths = [json.loads(path.read_text()) for path in paths]
    if args.ceiling:
        print(
            ceiling(
                [
                    (model, allocator_of(truth)[0] * 2**20)
                    for truth in truths
                    for model in truth["models"]
                ]
            )
        )
        return
    for limit_mb, one_region in sorted({allocator_of(truth) for truth in truths}):
        models = [
            model
            for truth in truths
            if allocator_of(truth) == (limit_mb, one_region)
            for model in truth["models"]
        ]
        layout = "one region" if one_region else "regions that grow (memory growth)"
        print(
            f"\nUnder {limit_mb} MiB, {layout}: the forecast (what the allocator held as the fit "
            f"began as the fixed part; the largest tensor and {MEASURED_HEADROOM:.0%} kept free) "
            "against T, beside the rule before, which kept 6% free:"
        )
        tried = try_forecasts(models, limit_mb, one_region, args.tries) if args.tries else {}
        print(table(models, limit_mb * 2**20, tried))
        if args.in_process:
            print(after_a_smaller_fit(models, limit_mb, one_region))


def allocator_of(truth: dict[str, Any]) -> tuple[int, bool]:
    """A saved run's limit, and whether its allocator's memory was one region (runs saved
    before the setting was recorded were)."""
    settings = truth["settings"]
    return settings["limit_mb"], settings.get("one_region", True)


if __name__ == "__main__":
    main(sys.argv[1:])
