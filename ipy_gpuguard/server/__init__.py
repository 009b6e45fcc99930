"""The jupyter_server extension: the GPU meter's reading and the kernels' recorded state, for
the lab extension, under authenticated, versioned, read-only endpoints."""

from __future__ import annotations

from typing import Any

from jupyter_server.utils import url_path_join

from .handlers import DevicesHandler, KernelStateHandler, PostMortemHandler
from .meter import Meter

__all__ = ["Meter", "_load_jupyter_server_extension"]

#: Where the endpoints live, under the server's base URL.
API_PATH = "ipy-gpuguard/api/v1"


def _load_jupyter_server_extension(server_app: Any) -> None:
    """Register the endpoints; NVML is opened on the first request, in a worker thread."""
    meter = Meter(runtime_dir=server_app.runtime_dir)
    web_app = server_app.web_app
    web_app.settings["ipy_gpuguard_meter"] = meter
    base = url_path_join(web_app.settings["base_url"], API_PATH)
    web_app.add_handlers(
        ".*$",
        [
            (url_path_join(base, "devices"), DevicesHandler, {"meter": meter}),
            (
                url_path_join(base, r"kernels/(?P<kernel_id>[\w-]+)/state"),
                KernelStateHandler,
                {"runtime_dir": server_app.runtime_dir},
            ),
            (
                url_path_join(base, r"kernels/(?P<kernel_id>[\w-]+)/post-mortem"),
                PostMortemHandler,
                {"runtime_dir": server_app.runtime_dir},
            ),
        ],
    )
    server_app.log.info("ipy_gpuguard: GPU meter, kernel state and post-mortems at /%s/", API_PATH)
