"""The CUDA runtime and cuDNN that can actually be loaded here, and their versions.

TensorFlow's Linux wheels load CUDA from the ``nvidia-*`` pip packages beside them
(``site-packages/nvidia/cudnn/lib``) before the system's loader path, so those directories are
searched first, as TensorFlow does. The versions come from the libraries themselves
(``cudaRuntimeGetVersion``, ``cudnnGetVersion``), which create no GPU context.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

#: Library file names by platform and major version; ``None`` is Linux's unversioned name
#: (Windows has none: every DLL carries its major).
_FILE_NAMES: dict[str, dict[str, Callable[[int | None], str]]] = {
    "cudart": {
        "linux": lambda major: (
            "libcudart.so"
            if major is None
            else f"libcudart.so.{major}{'.0' if major <= 11 else ''}"
        ),
        "win32": lambda major: "cudart64_110.dll" if major == 11 else f"cudart64_{major}.dll",
    },
    "cudnn": {
        "linux": lambda major: "libcudnn.so" if major is None else f"libcudnn.so.{major}",
        "win32": lambda major: f"cudnn64_{major}.dll",
    },
}
#: The pip package directory of each library, under ``site-packages/nvidia``.
_PIP_PACKAGES = {"cudart": "cuda_runtime", "cudnn": "cudnn"}
#: Majors looked for after the one wanted, so that a wrong version is found and named.
_KNOWN_MAJORS = {"cudart": (13, 12, 11), "cudnn": (9, 8)}


@dataclass(frozen=True)
class LoadedLibrary:
    """One library: its version and where it was loaded from, or why it could not be."""

    name: str
    version: tuple[int, ...] | None = None
    path: str | None = None
    problem: str | None = None

    @property
    def version_text(self) -> str:
        return ".".join(str(part) for part in self.version or ())


def load_cuda_runtime(
    load_library: Callable[[str], Any], platform: str, directories: Iterable[str], major: int | None
) -> LoadedLibrary:
    """The CUDA runtime (``libcudart``), ``major`` first when TensorFlow names one."""
    return _load("CUDA runtime", "cudart", load_library, platform, directories, major)


def load_cudnn(
    load_library: Callable[[str], Any], platform: str, directories: Iterable[str], major: int | None
) -> LoadedLibrary:
    """cuDNN, ``major`` first when TensorFlow names one."""
    return _load("cuDNN", "cudnn", load_library, platform, directories, major)


def pip_library_directories(platform: str) -> tuple[str, ...]:
    """``site-packages/nvidia/<package>/lib`` (``bin`` on Windows) of the pip CUDA packages,
    then ``%CUDA_PATH%\\bin`` on Windows."""
    spec = importlib.util.find_spec("nvidia")
    roots = list(spec.submodule_search_locations or ()) if spec is not None else []
    leaf = "bin" if platform == "win32" else "lib"
    directories = [
        os.path.join(root, package, leaf) for root in roots for package in _PIP_PACKAGES.values()
    ]
    if platform == "win32" and os.environ.get("CUDA_PATH"):
        directories.append(os.path.join(os.environ["CUDA_PATH"], "bin"))
    return tuple(directories)


def _load(
    name: str,
    kind: str,
    load_library: Callable[[str], Any],
    platform: str,
    directories: Iterable[str],
    major: int | None,
) -> LoadedLibrary:
    names = _FILE_NAMES[kind].get(platform)
    if names is None:
        return LoadedLibrary(name, problem=f"NVIDIA's CUDA libraries do not exist for {platform}")
    majors = [major] if major is not None else []
    majors += [known for known in _KNOWN_MAJORS[kind] if known != major]
    files = [names(each) for each in majors]
    if platform != "win32":
        files.append(names(None))
    directories = tuple(directories)
    candidates = [os.path.join(directory, file) for file in files for directory in directories]
    candidates += files  # the system's loader: LD_LIBRARY_PATH, ldconfig's cache, PATH
    for candidate in candidates:
        try:
            library = load_library(candidate)
        except OSError:
            continue  # not there, or not loadable: the next candidate
        where = candidate if os.sep in candidate else f"{candidate} (the system's loader)"
        version, problem = _read_version(kind, library)
        return LoadedLibrary(name, version, where, problem)
    wanted = names(major) if major is not None else " or ".join(dict.fromkeys(files))
    return LoadedLibrary(
        name,
        problem=f"{wanted} cannot be loaded (searched pip's nvidia packages and the system's "
        "loader path)",
    )


def _read_version(kind: str, library: Any) -> tuple[tuple[int, ...] | None, str | None]:
    try:
        if kind == "cudart":
            value = ctypes.c_int()
            status = library.cudaRuntimeGetVersion(ctypes.byref(value))
            if status != 0:
                return None, f"cudaRuntimeGetVersion answered error {status}"
            return (value.value // 1000, value.value % 1000 // 10), None
        function = library.cudnnGetVersion
        function.restype = ctypes.c_size_t
        return cudnn_version(int(function())), None
    except AttributeError as error:
        return None, f"it has no version function ({error})"


def cudnn_version(number: int) -> tuple[int, int, int]:
    """``cudnnGetVersion()`` as (major, minor, patch): 90300 is 9.3.0 and 8907 is 8.9.7,
    since cuDNN 9 gives the major ten thousands where cuDNN 8 gave it a thousand."""
    if number >= 90000:
        return number // 10000, number % 10000 // 100, number % 100
    return number // 1000, number % 1000 // 100, number % 100
