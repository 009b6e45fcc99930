"""Run in a child process: import one framework and print what it sees, as one JSON line.

``python -m ipy_gpuguard.doctor.child tensorflow`` imports TensorFlow, reads its build and the
GPUs it lists, and prints ``IPY_GPUGUARD_DOCTOR {...}``. A child process keeps the person's
kernel as it was (no framework imported into it, no GPU memory taken: JAX preallocates 75% of
a GPU when it starts), and an import that aborts or hangs ends the child, not the doctor.
Listing physical devices creates no GPU context, so the child takes no GPU memory either.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

MARKER = "IPY_GPUGUARD_DOCTOR "


def tensorflow() -> dict[str, Any]:
    import tensorflow as tf

    gpus, names = [], []
    for device in tf.config.list_physical_devices("GPU"):
        details = tf.config.experimental.get_device_details(device)
        capability = details.get("compute_capability")
        names.append(details.get("device_name", "GPU"))
        gpus.append(
            device.name
            + f" ({names[-1]}"
            + (f", compute capability {capability[0]}.{capability[1]})" if capability else ")")
        )
    build = {key: _plain(value) for key, value in tf.sysconfig.get_build_info().items()}
    return {"version": tf.__version__, "build": build, "gpus": gpus, "gpu_names": names}


def torch() -> dict[str, Any]:
    import torch

    cuda = torch.cuda
    cudnn: Any = torch.backends.cudnn  # untyped where torch is installed, unknown where not
    count = cuda.device_count() if cuda.is_available() else 0
    build = {
        "cuda_version": torch.version.cuda,
        "cudnn_version": cudnn.version(),
        "is_cuda_build": torch.version.cuda is not None,
    }
    names = [cuda.get_device_name(index) for index in range(count)]
    gpus = [f"cuda:{index} ({name})" for index, name in enumerate(names)]
    return {"version": torch.__version__, "build": build, "gpus": gpus, "gpu_names": names}


def jax() -> dict[str, Any]:
    import jax

    devices = [device for device in jax.devices() if device.platform == "gpu"]
    return {
        "version": jax.__version__,
        "build": {"backend": jax.default_backend()},
        "gpus": [f"{device} ({device.device_kind})" for device in devices],
        "gpu_names": [device.device_kind for device in devices],
    }


READERS: dict[str, Callable[[], dict[str, Any]]] = {
    "tensorflow": tensorflow,
    "torch": torch,
    "jax": jax,
}


def _plain(value: Any) -> Any:
    """Build info holds lists and strings; anything else is written as text."""
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return str(value)


def main(argv: list[str]) -> int:
    (name,) = argv
    try:
        seen = READERS[name]()
    except Exception as error:  # the import failing is itself what the doctor reports
        seen = {"import_error": f"{type(error).__name__}: {error}"}
    sys.stdout.flush()
    print(MARKER + json.dumps(seen), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
