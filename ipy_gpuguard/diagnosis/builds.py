"""TensorFlow's tested GPU build configurations, and the NVIDIA driver each CUDA needs.

Transcribed from https://www.tensorflow.org/install/source#gpu (Linux, tested build
configurations) and NVIDIA's CUDA Toolkit release notes (table 3, minimum driver versions),
on 2026-11-22. Releases newer than the last row are looked up as the last row, and say so.
"""

from __future__ import annotations

from dataclasses import dataclass

SOURCE = "https://www.tensorflow.org/install/source#gpu"
TRANSCRIBED = "2026-11-22"


@dataclass(frozen=True)
class BuildConfiguration:
    tensorflow: str
    cuda: str
    cudnn: str


#: Newest first; Windows native GPU builds end at 2.10 (later releases need WSL2).
TESTED_BUILDS = (
    BuildConfiguration("2.20", "12.5", "9.3"),
    BuildConfiguration("2.19", "12.5", "9.3"),
    BuildConfiguration("2.18", "12.5", "9.3"),
    BuildConfiguration("2.17", "12.3", "8.9"),
    BuildConfiguration("2.16", "12.3", "8.9"),
    BuildConfiguration("2.15", "12.2", "8.9"),
    BuildConfiguration("2.14", "11.8", "8.7"),
    BuildConfiguration("2.13", "11.8", "8.6"),
    BuildConfiguration("2.12", "11.8", "8.6"),
    BuildConfiguration("2.11", "11.2", "8.1"),
    BuildConfiguration("2.10", "11.2", "8.1"),
    BuildConfiguration("2.9", "11.2", "8.1"),
    BuildConfiguration("2.8", "11.2", "8.1"),
    BuildConfiguration("2.7", "11.2", "8.1"),
    BuildConfiguration("2.6", "11.2", "8.1"),
    BuildConfiguration("2.5", "11.2", "8.1"),
    BuildConfiguration("2.4", "11.0", "8.0"),
    BuildConfiguration("2.3", "10.1", "7.6"),
    BuildConfiguration("2.2", "10.1", "7.6"),
    BuildConfiguration("2.1", "10.1", "7.6"),
    BuildConfiguration("2.0", "10.0", "7.4"),
    BuildConfiguration("1.15", "10.0", "7.4"),
    BuildConfiguration("1.14", "10.0", "7.4"),
    BuildConfiguration("1.13", "10.0", "7.4"),
    BuildConfiguration("1.12", "9.0", "7"),
)

#: Minimum Linux driver for each CUDA release (Windows drivers are numbered differently).
MIN_LINUX_DRIVER = {
    "12": "525.60.13",
    "11": "450.80.02",
    "10.2": "440.33",
    "10.1": "418.39",
    "10.0": "410.48",
    "9.0": "384.81",
}


def tested_build(tensorflow_version: str) -> BuildConfiguration | None:
    """The tested configuration of a TensorFlow release (``2.15.1`` is looked up as 2.15)."""
    wanted = major_minor(tensorflow_version)
    if wanted is None:
        return None
    for build in TESTED_BUILDS:
        release = major_minor(build.tensorflow)
        if release is not None and release <= wanted:
            return build
    return None


def min_driver(cuda_version: str) -> str | None:
    """The oldest Linux driver that runs ``cuda_version`` (``12.3`` needs 525.60.13)."""
    major = cuda_version.split(".")[0]
    return MIN_LINUX_DRIVER.get(cuda_version) or MIN_LINUX_DRIVER.get(major)


def build_fields(
    tensorflow_version: str | None, cuda: str | None = None, cudnn: str | None = None
) -> dict[str, str]:
    """What remedy steps may name of a TensorFlow build: its version, CUDA and cuDNN, and the
    driver that CUDA needs.

    ``cuda`` and ``cudnn`` are the build's own, where it was read (``get_build_info``); the
    tested configuration of the release fills what they leave out.
    """
    if not tensorflow_version:
        return {}
    fields = {"tensorflow_version": tensorflow_version}
    tested = tested_build(tensorflow_version)
    cuda = _finer(cuda, tested.cuda if tested else None)
    cudnn = _finer(cudnn, tested.cudnn if tested else None)
    if cuda:
        fields["build_cuda"] = cuda
        driver = min_driver(cuda)
        if driver:
            fields["min_driver"] = driver
    if cudnn:
        fields["build_cudnn"] = cudnn
    return fields


def _finer(own: str | None, tested: str | None) -> str | None:
    """The build's own version, or the tested one where it says more of the same: Linux builds
    report cuDNN's major version alone ("8"), which the tested "8.1" makes installable."""
    if own is None or (tested is not None and tested.startswith(own + ".")):
        return tested
    return own


def major_minor(version: str) -> tuple[int, int] | None:
    """``"2.10.1"`` as (2, 10); ``None`` for text that does not start as a version."""
    parts = version.split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return None
