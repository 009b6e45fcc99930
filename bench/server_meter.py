"""What the GPU meter costs the server: ``GET devices`` (the shared reading and each kernel's
process tree) against Jupyter's own cheapest authenticated endpoint, ``GET api/status``, side by
side in one run on a real ``jupyter server`` with a simulated GPU and two running kernels.

    .venv/bin/python bench/server_meter.py
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

REQUESTS = 300
#: Clients polling at once: the reading is shared, so more clients must not mean more NVML.
CLIENTS = 8


def main() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    token = secrets.token_hex(8)
    runtime = tempfile.mkdtemp()
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter_server", "--no-browser", "--allow-root",
         f"--port={port}", f"--IdentityProvider.token={token}"],
        env={**os.environ, "GPUGUARD_SIMULATE": "8GiB", "JUPYTER_RUNTIME_DIR": runtime},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}/"

    def call(path: str, method: str = "GET", body: bytes | None = None) -> bytes:
        request = urllib.request.Request(
            base + path, data=body, method=method, headers={"Authorization": f"token {token}"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.read()

    try:
        for _ in range(100):
            try:
                call("api/status")
                break
            except OSError:
                time.sleep(0.2)
        for _ in range(2):  # the meter maps each running kernel's processes
            call("api/kernels", "POST", json.dumps({"name": "python3"}).encode())
        call("ipy-gpuguard/api/v1/devices")  # opens the telemetry once

        def timed(path: str) -> float:
            start = time.perf_counter()
            call(path)
            return time.perf_counter() - start

        results = {}
        with ThreadPoolExecutor(CLIENTS) as pool:
            for path in ("api/status", "ipy-gpuguard/api/v1/devices") * 2:  # interleaved
                times = list(pool.map(timed, [path] * REQUESTS))
                results.setdefault(path, []).extend(times)
        status = statistics.median(results["api/status"]) * 1e3
        devices = statistics.median(results["ipy-gpuguard/api/v1/devices"]) * 1e3
        print(f"{CLIENTS} clients, {2 * REQUESTS} requests each endpoint, 2 kernels, simulated GPU")
        print(f"GET api/status                     median {status:6.2f} ms")
        print(f"GET ipy-gpuguard/api/v1/devices    median {devices:6.2f} ms")
        print(f"devices / status                   {devices / status:6.2f}x")
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
