"""A machine for the doctor, healthy unless a test says otherwise.

A GPU machine is faked at its edges only: NVML (the fake ``pynvml``), the CUDA libraries
(objects answering ``cudaRuntimeGetVersion``/``cudnnGetVersion`` as ctypes functions do), the
package metadata, and what TensorFlow in a child process reported. Everything between those
inputs and the report is the doctor's own code.
"""

from __future__ import annotations

import ctypes
import dataclasses
import types
from collections.abc import Callable, Mapping
from typing import Any

from ipy_gpuguard.doctor import Machine
from ipy_gpuguard.doctor.frameworks import FrameworkView

from ..telemetry.fake_pynvml import FakeGpu, make_fake_nvml
from ..watchdog.fakes import FakeCudaRuntime

PIP_LIB = "/env/site-packages/nvidia/cudnn/lib"
PIP_RUNTIME = "/env/site-packages/nvidia/cuda_runtime/lib"

CUDA_BUILD = {
    "is_cuda_build": True,
    "is_rocm_build": False,
    "cuda_version": "12.5.1",
    "cudnn_version": "9",
}


class FakeRuntime(FakeCudaRuntime):
    """A ``libcudart`` that reports its ``version`` (12050 is 12.5) and the kernel time limit."""

    def __init__(self, version: int, timeout_enabled: bool = False) -> None:
        super().__init__(timeout_enabled)
        self.version = version

    def cudaRuntimeGetVersion(self, pointer: Any) -> int:  # noqa: N802
        ctypes.cast(pointer, ctypes.POINTER(ctypes.c_int)).contents.value = self.version
        return 0


def cudnn(version: int) -> types.SimpleNamespace:
    """A ``libcudnn`` whose ``cudnnGetVersion()`` answers ``version`` (90300 is 9.3.0)."""
    return types.SimpleNamespace(cudnnGetVersion=lambda: version)


class Libraries:
    """``ctypes.CDLL`` over a dict of paths; records every name it was asked for."""

    def __init__(self, libraries: Mapping[str, Any]) -> None:
        self.libraries = dict(libraries)
        self.asked: list[str] = []

    def __call__(self, name: str) -> Any:
        self.asked.append(name)
        if name not in self.libraries:
            raise OSError(f"{name}: cannot open shared object file: No such file or directory")
        return self.libraries[name]


def tensorflow_view(**changes: Any) -> FrameworkView:
    view = FrameworkView(
        "tensorflow",
        version="2.20.0",
        build=CUDA_BUILD,
        gpus=("/physical_device:GPU:0 (NVIDIA A100-SXM4-80GB, compute capability 8.0)",),
        seconds=4.0,
    )
    return dataclasses.replace(view, **changes)


def machine(
    gpus: list[FakeGpu] | None = None,
    nvml: types.ModuleType | None = None,
    environ: Mapping[str, str] | None = None,
    versions: Mapping[str, str] | None = None,
    libraries: Mapping[str, Any] | None = None,
    tensorflow: FrameworkView | None = None,
    **changes: Any,
) -> Machine:
    """A Linux machine with one A100, TensorFlow 2.20's CUDA build and matching libraries, and
    no Xid in its kernel log."""
    if nvml is None:
        nvml = make_fake_nvml([FakeGpu()] if gpus is None else gpus, cuda_driver=12080)
    views = {"tensorflow": tensorflow or tensorflow_view()}
    installed = {"tensorflow": "2.20.0", "keras": "3.10.0"} if versions is None else versions
    loader = Libraries(
        {
            f"{PIP_RUNTIME}/libcudart.so.12": FakeRuntime(12050),
            f"{PIP_LIB}/libcudnn.so.9": cudnn(90300),
            "libcuda.so.1": FakeRuntime(12080),  # the driver's library, for the GPU watchdog
        }
        if libraries is None
        else libraries
    )
    inputs: dict[str, Any] = {
        "environ": {} if environ is None else dict(environ),
        "platform": "linux",
        "description": "Python 3.11.7 (CPython) on Linux-6.1.0-x86_64-with-glibc2.36",
        "version_of": installed.get,
        "open_nvml": lambda: nvml,
        "load_library": loader,
        "library_directories": (PIP_RUNTIME, PIP_LIB),
        "read_framework": framework_reader(views),
        "modules": {},
        "process_name": {4242: "python3"}.get,
        "pid": 1000,
        "read_kernel_log": lambda: "[    0.000000] Linux version 6.1.0-x86_64\n",
    }
    inputs.update(changes)
    return Machine(**inputs)


def framework_reader(views: Mapping[str, FrameworkView]) -> Callable[[str], FrameworkView]:
    def read(framework: str) -> FrameworkView:
        return views[framework]

    return read
