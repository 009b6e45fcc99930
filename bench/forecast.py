"""The memory forecast against the true largest batch, side by side in one run (issue 37).

For each model of :mod:`forecast_zoo`, :mod:`forecast_truth` measures the true largest batch T
under TensorFlow's BFC allocator on the CPU with a limit, and a run of 3 steps at T//4. The
forecast is then what the guard makes of that run (:class:`~ipy_gpuguard.retry.forecast.
MemoryLine` through the allocator's peak, with what the allocator held before the fit as the
fixed part, the model's largest tensor and :data:`~ipy_gpuguard.retry.forecast.
MEASURED_HEADROOM` kept free): its largest batch, its error against T, and whether it is above T
(the one error that costs a crash). Beside it, the rule before the largest tensor was kept free:
:data:`~ipy_gpuguard.retry.forecast.HEADROOM` alone.

A third of the first zoo's models is held out by a hash of its name; the models of
:mod:`forecast_zoo_held_out`, added after the forecast's rule, are all held out.

Run: .venv/bin/python bench/forecast.py [--models mlp,cnn] [--limit-mb 512]   (about 20 minutes)
     .venv/bin/python bench/forecast.py --truth /tmp/fz/truth.json [--truth ...]   (saved runs)
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

from ipy_gpuguard.retry.forecast import HEADROOM, MEASURED_HEADROOM, MemoryLine


def held_out(name: str) -> bool:
    """A third of the first zoo, by a hash of the name; every model added after the rule."""
    later = any(model.name == name for model in HELD_OUT_ZOO)
    return later or hashlib.sha256(name.encode()).digest()[0] % 3 == 0


def forecast_of(model: dict[str, Any], capacity_bytes: int, keep_largest: bool) -> int | None:
    """The guard's largest batch from the run at T//4, as its forecaster makes it; without
    ``keep_largest``, as it made it before the largest tensor was kept free."""
    fixed = model["resident_bytes"] + model["trainable_bytes"]  # held as fit began, gradients
    largest_tensor = model.get("largest_tensor_bytes", 0) if keep_largest else 0
    line = MemoryLine.measured(
        model["quarter_batch"], model["peak_at_quarter"], fixed, largest_tensor
    )
    return None if line is None else line.largest_batch(capacity_bytes)


RULES = ((True, "largest tensor kept"), (False, f"headroom {HEADROOM:.0%} alone"))


def table(models: list[dict[str, Any]], capacity_bytes: int) -> str:
    rows = [
        f"| model | family | T | forecast from T/4 | error | {RULES[1][1]}: forecast | error |",
        "|---|---|---|---|---|---|---|",
    ]
    errors: dict[tuple[bool, bool], list[float]] = {}
    for model in models:
        cells = []
        for keep_largest, _ in RULES:
            largest = forecast_of(model, capacity_bytes, keep_largest)
            if largest is None:
                cells += ["none", ""]
                continue
            error = (largest - model["T"]) / model["T"]
            errors.setdefault((keep_largest, held_out(model["name"])), []).append(error)
            cells += [str(largest), f"{error:+.1%}{' above' if error > 0 else ''}"]
        mark = " (held out)" if held_out(model["name"]) else ""
        rows.append(
            f"| {model['name']}{mark} | {model['family']} | {model['T']} | {' | '.join(cells)} |"
        )
    rows.append("")
    for keep_largest, rule in RULES:
        for is_held, name in ((False, "tuned on"), (True, "held out")):
            if errors.get((keep_largest, is_held)):
                rows.append(error_summary(f"{rule}, {name}", errors[(keep_largest, is_held)]))
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
    args = parser.parse_args(argv)
    paths = args.truth or [Path("/tmp/fz/truth.json")]
    if args.truth is None:
        models = ["--models", args.models] if args.models else []
        forecast_truth.main([str(paths[0]), "--limit-mb", str(args.limit_mb), *models])
    truths = [json.loads(path.read_text()) for path in paths]
    (limit_mb,) = {truth["settings"]["limit_mb"] for truth in truths}
    print(
        f"\nForecast (the largest tensor and {MEASURED_HEADROOM:.0%} kept free) against T, "
        f"beside the rule of {HEADROOM:.0%} alone:"
    )
    print(table([model for truth in truths for model in truth["models"]], limit_mb * 2**20))


if __name__ == "__main__":
    main(sys.argv[1:])
