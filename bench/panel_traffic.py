"""What the live panel sends a frontend, measured in a real kernel side by side in one run.

The same guarded cell (a loop of short sleeps, as a training's steps) runs with the panel and
with ``--no-panel``, alternately. For each: the cell's wall time, and the iopub messages and
bytes it sent (the panel's redraws are ``update_display_data`` of its display). Prints the
medians, the panel's messages and KiB per second of the cell, and the wall-time ratio.

Run: .venv/bin/python bench/panel_traffic.py [--seconds 10] [--rounds 3] [--interval 0.25]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from jupyter_client.manager import start_new_kernel


def run_cell(client: object, code: str) -> tuple[float, int, int]:
    """Run ``code``; returns its wall time, and the messages and bytes it sent on iopub."""
    started = time.perf_counter()
    msg_id = client.execute(code)  # type: ignore[attr-defined]
    messages = size = 0
    while True:
        msg = client.get_iopub_msg(timeout=120)  # type: ignore[attr-defined]
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        messages += 1
        size += len(json.dumps(msg["content"], default=str))
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return time.perf_counter() - started, messages, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="how long the cell runs")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--interval", type=float, default=0.25, help="the sampling interval")
    args = parser.parse_args()
    steps = int(args.seconds / 0.01)
    body = f"import time\nfor _ in range({steps}):\n    time.sleep(0.01)"
    cells = {
        "panel": f"%%gpuguard --interval {args.interval}\n{body}",
        "--no-panel": f"%%gpuguard --no-panel --interval {args.interval}\n{body}",
    }
    manager, client = start_new_kernel(env={**os.environ, "GPUGUARD_SIMULATE": "8GiB"})
    try:
        run_cell(client, "%load_ext ipy_gpuguard")
        for code in cells.values():
            run_cell(client, code.replace(f"range({steps})", "range(10)"))  # warm up
        measured: dict[str, list[tuple[float, int, int]]] = {name: [] for name in cells}
        for _ in range(args.rounds):
            for name, code in cells.items():
                measured[name].append(run_cell(client, code))
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)

    print(f"a guarded cell of {args.seconds:.0f} s, sampling every {args.interval} s, medians")
    print(f"{'':12} {'wall s':>8} {'messages':>9} {'KiB':>8} {'msgs/s':>7} {'KiB/s':>7}")
    medians = {}
    for name, runs in measured.items():
        wall, messages, size = (statistics.median(values) for values in zip(*runs, strict=True))
        medians[name] = wall
        print(
            f"{name:12} {wall:8.2f} {messages:9.0f} {size / 1024:8.1f} "
            f"{messages / wall:7.1f} {size / 1024 / wall:7.1f}"
        )
    print(f"wall time, panel / --no-panel: {medians['panel'] / medians['--no-panel']:.3f}")


if __name__ == "__main__":
    main()
