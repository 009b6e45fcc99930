"""``python -m ipy_gpuguard doctor`` (and ``ipy-gpuguard doctor``): the doctor in a terminal.

The report goes to stdout, as text or with ``--json`` as JSON; what takes time is said on
stderr while it happens, so that ``--json`` output stays clean for a pipe. The exit status is
0 when nothing is wrong and 1 when a check found a problem, so scripts and CI can gate on it.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ipy_gpuguard",
        description="ipy_gpuguard on the command line (in a notebook: %load_ext ipy_gpuguard).",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    doctor = commands.add_parser(
        "doctor",
        help="check the GPU environment and say what to fix",
        description=(
            "Check the GPU environment before training: the driver against the CUDA TensorFlow "
            "was built with, the CUDA and cuDNN that load, the GPUs the driver and each "
            "framework see, memory settings, other processes and the GPU watchdog. Exit "
            "status 0 when nothing is wrong, 1 when a check finds a problem."
        ),
    )
    doctor.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    for stream in (sys.stdout, sys.stderr):
        # An ASCII or Latin-1 terminal gets "?" for the report's marks, never a traceback.
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="replace")

    from .doctor import run_doctor
    from .doctor.render import report_data, report_text

    report = run_doctor(announce=lambda message: print(message, file=sys.stderr, flush=True))
    if args.json:
        print(json.dumps(report_data(report), indent=2, ensure_ascii=False))
    else:
        colour = sys.stdout.isatty() and "NO_COLOR" not in os.environ
        print(report_text(report, shutil.get_terminal_size().columns, colour))
    return report.exit_status
