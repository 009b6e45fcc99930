"""Reading a framework in a child process: the real TensorFlow here, and what a child can do."""

from __future__ import annotations

import json
import sys
from importlib import metadata

import pytest

from ipy_gpuguard.diagnosis.context import installed_tensorflow
from ipy_gpuguard.doctor.child import MARKER
from ipy_gpuguard.doctor.frameworks import gpu_messages, read_in_child, view_of_child


@pytest.mark.tensorflow
def test_the_real_tensorflow_read_in_a_child_is_this_machines_cpu_build():
    view = read_in_child("tensorflow")
    assert view.usable, view
    assert view.version == installed_tensorflow()
    assert view.build["is_cuda_build"] is False
    assert view.gpus == ()  # no GPU here


@pytest.mark.tensorflow
def test_the_child_leaves_this_process_without_tensorflow(tmp_path):
    import subprocess

    script = (
        "import sys\n"
        "from ipy_gpuguard.doctor.frameworks import read_in_child\n"
        "view = read_in_child('tensorflow')\n"
        "print(view.usable, 'tensorflow' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True
    )
    assert result.stdout.split() == ["True", "False"]


def test_a_framework_that_is_not_installed_is_an_import_error_not_a_failure():
    view = read_in_child("jax") if _missing("jax") else read_in_child("torch")
    assert view.failure is None
    assert view.import_error is not None
    assert view.import_error.startswith("ModuleNotFoundError: No module named")


def _missing(distribution):
    try:
        metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return True
    return False


def test_a_child_past_its_time_limit_is_a_failure():
    view = read_in_child("tensorflow", timeout_s=0.01)
    assert view.failure == "importing it took longer than 0.01 s"


def test_a_crashed_child_is_a_failure_with_its_signal_and_last_words():
    view = view_of_child("tensorflow", -11, "", "loading...\nFatal Python error: Aborted\n", 1.0)
    assert (
        view.failure == "importing it in a child process failed: the child was killed by signal 11"
    )
    assert view.messages == ("loading...", "Fatal Python error: Aborted")


def test_the_childs_report_is_found_among_what_the_framework_printed():
    seen = {
        "version": "2.20.0",
        "build": {"is_cuda_build": True},
        "gpus": ["/physical_device:GPU:0"],
    }
    stdout = f"some banner\n{MARKER}{json.dumps(seen)}\n"
    stderr = (
        "W0000 00:00:1700000000.000000   1234 cuda_dnn.cc:522] Could not load dynamic library "
        "'libcudnn.so.9'; dlerror: libcudnn.so.9: cannot open shared object file\n"
        "I0000 00:00:1700000000.000000   1234 port.cc:153] oneDNN custom operations are on.\n"
    )
    view = view_of_child("tensorflow", 0, stdout, stderr, 2.5)
    assert view.gpus == ("/physical_device:GPU:0",)
    assert view.build == {"is_cuda_build": True}
    assert view.messages == (
        "Could not load dynamic library 'libcudnn.so.9'; dlerror: libcudnn.so.9: cannot open "
        "shared object file",
    )


def test_gpu_messages_keep_the_last_distinct_ones():
    log = "\n".join(f"Could not load dynamic library 'lib{n}.so'" for n in (1, 2, 2, 3, 4, 5, 6, 7))
    assert gpu_messages(log) == tuple(
        f"Could not load dynamic library 'lib{n}.so'" for n in (2, 3, 4, 5, 6, 7)
    )
