"""Finding the CUDA runtime and cuDNN as TensorFlow would, and reading their versions."""

from __future__ import annotations

import pytest

from ipy_gpuguard.doctor.libraries import cudnn_version, load_cuda_runtime, load_cudnn

from .fakes import PIP_LIB, PIP_RUNTIME, FakeRuntime, Libraries, cudnn


@pytest.mark.parametrize(
    ("number", "version"),
    [(90300, (9, 3, 0)), (90101, (9, 1, 1)), (8907, (8, 9, 7)), (8100, (8, 1, 0))],
)
def test_cudnn_version_numbers_of_both_generations(number, version):
    assert cudnn_version(number) == version


def test_pip_packages_come_before_the_systems_loader():
    loader = Libraries({f"{PIP_LIB}/libcudnn.so.9": cudnn(90300), "libcudnn.so.9": cudnn(90100)})
    loaded = load_cudnn(loader, "linux", (PIP_RUNTIME, PIP_LIB), 9)
    assert loaded.version == (9, 3, 0)
    assert loaded.path == f"{PIP_LIB}/libcudnn.so.9"
    assert loader.asked == [f"{PIP_RUNTIME}/libcudnn.so.9", f"{PIP_LIB}/libcudnn.so.9"]


def test_another_major_is_found_and_named_when_the_wanted_one_is_missing():
    loader = Libraries({"libcudnn.so.8": cudnn(8907)})
    loaded = load_cudnn(loader, "linux", (), 9)
    assert loaded.version == (8, 9, 7)
    assert loaded.path == "libcudnn.so.8 (the system's loader)"
    assert loader.asked[0] == "libcudnn.so.9"


def test_cuda_11_runtime_has_its_own_file_name():
    loader = Libraries({"libcudart.so.11.0": FakeRuntime(11080)})
    loaded = load_cuda_runtime(loader, "linux", (), 11)
    assert loaded.version == (11, 8)


def test_windows_names_and_nothing_loadable():
    loader = Libraries({})
    loaded = load_cudnn(loader, "win32", (r"C:\CUDA\bin",), 9)
    assert loaded.version is None
    assert loaded.problem.startswith("cudnn64_9.dll cannot be loaded")
    assert "cudnn64_8.dll" in loader.asked


def test_a_library_without_the_version_function_is_loaded_but_unknown():
    loaded = load_cudnn(Libraries({"libcudnn.so.9": object()}), "linux", (), 9)
    assert loaded.path == "libcudnn.so.9 (the system's loader)"
    assert loaded.version is None
    assert "no version function" in loaded.problem


def test_macos_has_no_cuda():
    loaded = load_cuda_runtime(Libraries({}), "darwin", (), None)
    assert loaded.problem == "NVIDIA's CUDA libraries do not exist for darwin"
