"""Each check's verdict and remedies, for each outcome, on machines faked at their edges."""

from __future__ import annotations

import os
import types

import pynvml
import pytest

from ipy_gpuguard.doctor import CHECKS, Status, run_doctor
from ipy_gpuguard.doctor.frameworks import FrameworkView
from ipy_gpuguard.doctor.machine import read_keras_config
from ipy_gpuguard.telemetry import TelemetryUnavailable

from ..telemetry.fake_pynvml import FakeGpu, make_fake_nvml
from .fakes import PIP_LIB, PIP_RUNTIME, FakeRuntime, cudnn, machine, tensorflow_view

GIB = 1024**3


def remedy_ids(check):
    return [remedy.id for remedy in check.verdict.remedies]


def steps(check):
    return " ".join(step for remedy in check.verdict.remedies for step in remedy.steps)


def test_a_healthy_gpu_machine_passes_every_check():
    report = run_doctor(machine())
    assert {check.id: check.status for check in report.checks} == {
        check_id: Status.OK for check_id, _, _ in CHECKS if check_id != "gpu_numbers"
    }  # one GPU: its number is everyone's, and there is no row for it
    assert report.exit_status == 0
    assert all(not check.verdict.remedies for check in report.checks)
    gpus = report.check("gpus").verdict
    assert gpus.found == "1 GPU visible to CUDA frameworks, and TensorFlow sees it"
    assert any("A100" in line for line in gpus.details)
    libraries = report.check("cuda_libraries").verdict
    assert f"{PIP_LIB}/libcudnn.so.9" in " ".join(libraries.details)
    assert "cuDNN 9.3.0" in libraries.found


def test_cpu_only_tensorflow_on_a_machine_with_a_gpu_is_a_problem_with_its_cause():
    cpu_build = {"is_cuda_build": False, "is_rocm_build": False}
    report = run_doctor(
        machine(
            versions={"tensorflow-cpu": "2.20.0"},
            tensorflow=tensorflow_view(build=cpu_build, gpus=()),
        )
    )
    uses_gpu = report.check("tensorflow_gpu")
    assert uses_gpu.status is Status.PROBLEM
    assert "is a CPU-only build, on a machine with an NVIDIA GPU (GPU 0 NVIDIA A100" in (
        uses_gpu.verdict.found
    )
    assert "tensorflow-cpu is the package without GPU support" in uses_gpu.verdict.found
    assert remedy_ids(uses_gpu) == ["install_gpu_tensorflow"]
    assert "pip install 'tensorflow[and-cuda]==2.20.0'" in steps(uses_gpu)
    gpus = report.check("gpus")
    assert gpus.status is Status.PROBLEM
    assert "the driver sees 1 visible GPU but TensorFlow sees none" in gpus.verdict.found
    assert "CPU-only build" in gpus.verdict.found
    assert remedy_ids(gpus) == ["install_gpu_tensorflow"]
    assert report.check("cuda_libraries").status is Status.OK  # not needed by a CPU build
    assert report.exit_status == 1


def test_native_windows_tensorflow_after_2_10_is_named_as_the_cause():
    report = run_doctor(
        machine(
            platform="win32",
            tensorflow=tensorflow_view(build={"is_cuda_build": False}, gpus=()),
        )
    )
    found = report.check("tensorflow_gpu").verdict.found
    assert "TensorFlow 2.11 and later has no GPU build for native Windows" in found


def test_a_cudnn_older_than_tensorflows_build_is_a_problem():
    report = run_doctor(
        machine(
            libraries={
                f"{PIP_RUNTIME}/libcudart.so.12": FakeRuntime(12050),
                "libcudnn.so.8": cudnn(8907),
            },
            tensorflow=tensorflow_view(
                gpus=(),
                messages=("Could not load dynamic library 'libcudnn.so.9'",),
            ),
        )
    )
    libraries = report.check("cuda_libraries")
    assert libraries.status is Status.PROBLEM
    assert libraries.verdict.found == (
        "cuDNN 8.9.7 is loaded, but TensorFlow 2.20.0 needs cuDNN 9.3 or a newer 9.x"
    )
    assert "cuDNN 8.9.7: libcudnn.so.8 (the system's loader)" in libraries.verdict.details
    assert remedy_ids(libraries) == ["install_matching_libraries"]
    assert "TensorFlow 2.20.0 was built with CUDA 12.5 and cuDNN 9." in steps(libraries)
    gpus = report.check("gpus")
    assert gpus.status is Status.PROBLEM
    assert gpus.verdict.found.endswith(libraries.verdict.found)  # the likely cause
    assert "TensorFlow says: Could not load dynamic library 'libcudnn.so.9'" in (
        gpus.verdict.details
    )


def test_a_cudnn_of_the_right_major_but_an_older_minor_is_a_problem():
    report = run_doctor(
        machine(
            libraries={
                f"{PIP_RUNTIME}/libcudart.so.12": FakeRuntime(12050),
                f"{PIP_LIB}/libcudnn.so.9": cudnn(90100),
            }
        )
    )
    assert report.check("cuda_libraries").status is Status.PROBLEM
    assert "cuDNN 9.1.0 is loaded" in report.check("cuda_libraries").verdict.found


def test_no_loadable_cuda_runtime_is_a_problem_that_says_what_was_searched():
    report = run_doctor(machine(libraries={f"{PIP_LIB}/libcudnn.so.9": cudnn(90300)}))
    libraries = report.check("cuda_libraries")
    assert libraries.status is Status.PROBLEM
    assert "libcudart.so.12 cannot be loaded" in libraries.verdict.found


def test_a_driver_too_old_for_tensorflows_cuda_is_a_problem():
    nvml = make_fake_nvml([FakeGpu()], driver="470.82.01", cuda_driver=11040)
    report = run_doctor(machine(nvml=nvml, tensorflow=tensorflow_view(gpus=())))
    driver = report.check("driver")
    assert driver.status is Status.PROBLEM
    assert driver.verdict.found == (
        "driver 470.82.01, which runs CUDA up to 11.4; TensorFlow 2.20.0 was built with CUDA "
        "12.5.1, which this driver cannot run"
    )
    assert remedy_ids(driver) == ["update_driver_for_cuda"]
    assert "CUDA 12.5 needs driver 525.60.13 or newer." in steps(driver)
    gpus = report.check("gpus")
    assert gpus.status is Status.PROBLEM
    assert remedy_ids(gpus) == ["update_driver_for_cuda"]


def test_a_driver_of_the_same_cuda_major_but_older_minor_is_a_warning():
    nvml = make_fake_nvml([FakeGpu()], driver="535.104.05", cuda_driver=12020)
    driver = run_doctor(machine(nvml=nvml)).check("driver")
    assert driver.status is Status.WARNING
    assert "minor-version compatibility" in driver.verdict.found
    assert remedy_ids(driver) == ["update_driver_for_cuda", "ptx_toolchain"]


@pytest.mark.parametrize("setting", ["", "-1", "2"])
def test_a_gpu_hidden_by_cuda_visible_devices_is_a_problem(setting):
    two = [FakeGpu(uuid="GPU-aaaa"), FakeGpu(uuid="GPU-bbbb")]
    report = run_doctor(
        machine(
            gpus=two,
            environ={"CUDA_VISIBLE_DEVICES": setting},
            tensorflow=tensorflow_view(gpus=()),
        )
    )
    gpus = report.check("gpus")
    assert gpus.status is Status.PROBLEM
    assert gpus.verdict.found == (
        f"CUDA_VISIBLE_DEVICES={setting!r} hides all 2 GPUs the driver sees"
    )
    assert remedy_ids(gpus) == ["check_gpu_visible"]
    assert f"(now {setting!r})" in steps(gpus)
    assert "%gpuguard doctor" not in steps(gpus)  # the doctor does not send you to itself
    assert report.check("other_processes").status is Status.UNKNOWN


def test_a_gpu_partly_hidden_by_cuda_visible_devices_is_fine_and_shown():
    two = [FakeGpu(uuid="GPU-aaaa"), FakeGpu(uuid="GPU-bbbb", name="NVIDIA L4")]
    report = run_doctor(machine(gpus=two, environ={"CUDA_VISIBLE_DEVICES": "1"}))
    gpus = report.check("gpus")
    assert gpus.status is Status.OK
    assert "CUDA_VISIBLE_DEVICES='1'" in gpus.verdict.details


@pytest.mark.parametrize(
    ("nvml_input", "reason"),
    [
        (
            lambda: make_fake_nvml([], init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND),
            "NVML library not found: no NVIDIA driver is installed here",
        ),
        (
            lambda: (_ for _ in ()).throw(TelemetryUnavailable("nvidia-ml-py is not installed")),
            "nvidia-ml-py is not installed",
        ),
    ],
    ids=["no-driver", "no-nvidia-ml-py"],
)
def test_nvml_missing_means_no_gpu_with_the_reason(nvml_input, reason):
    cpu = tensorflow_view(build={"is_cuda_build": False}, gpus=())
    report = run_doctor(machine(open_nvml=nvml_input, tensorflow=cpu))
    gpus = report.check("gpus")
    assert gpus.status is Status.PROBLEM
    assert gpus.verdict.found.startswith(f"no GPU: {reason}")
    assert remedy_ids(gpus) == ["check_gpu_visible"]
    for check_id in ("driver", "other_processes", "gpu_watchdog"):
        check = report.check(check_id)
        assert check.status is Status.UNKNOWN
        assert check.verdict.found.startswith(reason)
    assert report.exit_status == 1


def test_without_nvml_a_gpu_tensorflow_sees_through_directml_is_fine():
    dml = tensorflow_view(build={"is_cuda_build": False}, gpus=("/physical_device:GPU:0",))
    nvml = make_fake_nvml([], init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    report = run_doctor(
        machine(
            nvml=nvml,
            tensorflow=dml,
            platform="win32",
            versions={"tensorflow-cpu": "2.10.0", "tensorflow-directml-plugin": "0.4.0"},
        )
    )
    assert report.check("gpus").status is Status.OK
    assert report.check("tensorflow_gpu").verdict.found == (
        "GPUs through DirectML (tensorflow-directml-plugin)"
    )
    assert report.exit_status == 0


def test_another_process_holding_memory_is_a_warning_with_its_pid_and_name():
    shared = FakeGpu(processes=[(4242, 30 * GIB), (1000, 40 * GIB)], graphics_processes=[(77, 1)])
    report = run_doctor(machine(gpus=[shared]))
    others = report.check("other_processes")
    assert others.status is Status.WARNING
    assert (
        others.verdict.found
        == "other processes hold GPU memory: GPU 0: pid 4242 (python3) holds 30.0 GiB"
    )
    assert remedy_ids(others) == ["stale_process"]
    assert "pid 4242 (python3) holds 30.0 GiB" in steps(others)
    assert "pid 1000" not in others.verdict.found  # this process itself
    memory = report.check("memory_settings")
    assert memory.status is Status.WARNING
    assert memory.verdict.found.startswith("memory growth is off on a shared GPU")
    assert remedy_ids(memory) == ["memory_growth", "cuda_malloc_async"]


def test_in_a_container_the_doctor_names_no_process_as_another():
    """NVML lists the host's PIDs in a container: the doctor warned that "pid 91234 holds
    30.0 GiB", which was the person's own kernel, and offered to stop it."""
    host_pids = FakeGpu(processes=[(91234, 30 * GIB), (91300, 2 * GIB)])
    report = run_doctor(machine(gpus=[host_pids], pid=None))
    others = report.check("other_processes")
    assert others.status is Status.UNKNOWN
    assert others.verdict.found == (
        "NVML lists GPU processes by the host's process IDs, which a container cannot tell from "
        "its own: GPU 0: 2 processes hold 32.0 GiB in all, this one among them if it uses the GPU"
    )
    assert remedy_ids(others) == []
    assert report.check("memory_settings").status is Status.OK  # not "a shared GPU"


def test_memory_growth_on_a_shared_gpu_is_fine():
    shared = FakeGpu(processes=[(4242, 30 * GIB)])
    report = run_doctor(machine(gpus=[shared], environ={"TF_FORCE_GPU_ALLOW_GROWTH": "true"}))
    memory = report.check("memory_settings")
    assert memory.status is Status.OK
    assert memory.verdict.found == "memory growth on, BFC allocator"


def test_a_display_servers_small_share_is_not_a_warning():
    display = FakeGpu(graphics_processes=[(900, 300 * 1024**2)])
    report = run_doctor(machine(gpus=[display]))
    others = report.check("other_processes")
    assert others.status is Status.OK
    assert others.verdict.details == ("GPU 0: pid 900 holds 300 MiB",)  # shown, not a warning


@pytest.mark.parametrize(
    ("variable", "value", "remedy"),
    [
        ("TF_FORCE_GPU_ALLOW_GROWTH", "True", "memory_growth"),
        ("TF_GPU_ALLOCATOR", "cuda_async", "cuda_malloc_async"),
    ],
)
def test_a_memory_setting_tensorflow_does_not_understand_is_a_warning(variable, value, remedy):
    memory = run_doctor(machine(environ={variable: value})).check("memory_settings")
    assert memory.status is Status.WARNING
    assert memory.verdict.found.startswith(f"{variable}={value!r}")
    assert remedy_ids(memory) == [remedy]


def test_settings_fixed_by_an_initialised_tensorflow_in_this_process_ask_for_a_restart():
    modules = _initialised_tensorflow(memory_growth=False)
    shared = FakeGpu(processes=[(4242, 30 * GIB)])
    memory = run_doctor(machine(gpus=[shared], modules=modules)).check("memory_settings")
    assert memory.status is Status.WARNING
    assert any("already set up the GPU in this process" in line for line in memory.verdict.details)
    assert memory.verdict.remedies[0].note.startswith("Needs a kernel restart")


def _initialised_tensorflow(memory_growth):
    experimental = types.SimpleNamespace(get_memory_growth=lambda gpu: memory_growth)
    config = types.SimpleNamespace(
        list_physical_devices=lambda kind: ["gpu0"], experimental=experimental
    )
    state = types.SimpleNamespace(_initialized=True)
    return {
        "tensorflow": types.SimpleNamespace(config=config),
        "tensorflow.python.eager.context": types.SimpleNamespace(context_safe=lambda: state),
    }


def test_a_windows_display_gpu_under_wddm_has_a_watchdog_warning():
    display = FakeGpu(driver_model=0, display_active=True)
    report = run_doctor(
        machine(gpus=[display], platform="win32", read_registry=lambda: {"TdrDelay": 2})
    )
    watchdog = report.check("gpu_watchdog")
    assert watchdog.status is Status.WARNING
    assert "Windows resets this WDDM GPU and drives a display" in watchdog.verdict.found
    assert remedy_ids(watchdog) == ["smaller_work", "tcc_mode", "tdr_registry"]
    assert "nvidia-smi -i 0 -dm 1" in steps(watchdog)


def test_a_linux_gpu_with_a_kernel_time_limit_has_a_watchdog_warning():
    runtime = FakeRuntime(12050, timeout_enabled=True)
    libraries = {"libcudart.so": runtime, f"{PIP_LIB}/libcudnn.so.9": cudnn(90300)}
    watchdog = run_doctor(machine(libraries=libraries)).check("gpu_watchdog")
    assert watchdog.status is Status.WARNING
    assert remedy_ids(watchdog) == ["smaller_work"]
    assert runtime.asked == [(17, 0)]


def test_a_tcc_gpu_on_windows_has_no_watchdog():
    watchdog = run_doctor(machine(gpus=[FakeGpu(driver_model=1)], platform="win32")).check(
        "gpu_watchdog"
    )
    assert watchdog.status is Status.OK
    assert "TCC driver model" in watchdog.verdict.details[0]


def test_tensorflow_that_fails_to_import_is_a_problem_naming_the_library():
    broken = FrameworkView(
        "tensorflow",
        import_error="ImportError: libcudnn.so.9: cannot open shared object file",
    )
    build = run_doctor(machine(tensorflow=broken)).check("tensorflow_build")
    assert build.status is Status.PROBLEM
    assert build.verdict.found == (
        "import tensorflow fails: ImportError: libcudnn.so.9: cannot open shared object file"
    )
    assert remedy_ids(build) == ["install_matching_libraries"]


def test_a_child_that_crashed_importing_tensorflow_could_not_be_checked():
    crashed = FrameworkView(
        "tensorflow",
        failure="importing it in a child process failed: the child was killed by signal 11",
        messages=("Segmentation fault",),
    )
    report = run_doctor(machine(tensorflow=crashed))
    build = report.check("tensorflow_build")
    assert build.status is Status.UNKNOWN
    assert "killed by signal 11" in build.verdict.found
    assert build.verdict.details == ("Segmentation fault",)
    assert report.check("tensorflow_gpu").status is Status.UNKNOWN
    assert report.check("gpus").status is Status.OK  # the driver's view still stands


def test_a_gpu_tensorflow_skips_for_its_architecture_is_named():
    old = tensorflow_view(
        gpus=(),
        messages=(
            "Ignoring visible gpu device (device: 0, name: Tesla K10.G1.8GB) with Cuda compute "
            "capability 3.0. The minimum required Cuda capability is 3.5.",
        ),
    )
    gpus = run_doctor(machine(tensorflow=old)).check("gpus")
    assert gpus.status is Status.PROBLEM
    assert "compute capability 3.0" in gpus.verdict.found
    assert remedy_ids(gpus) == ["match_gpu_architecture"]


def test_tensorflow_built_otherwise_than_its_tested_configuration_is_a_warning():
    conda = tensorflow_view(build={**tensorflow_view().build, "cuda_version": "12.0"})
    build = run_doctor(machine(tensorflow=conda)).check("tensorflow_build")
    assert build.status is Status.WARNING
    assert "the tested build of 2.20 uses CUDA 12.5 and cuDNN 9.3" in build.verdict.found


def test_a_release_newer_than_the_table_says_which_row_it_was_compared_with():
    newer = tensorflow_view(version="2.99.0")
    build = run_doctor(machine(tensorflow=newer, versions={"tensorflow": "2.99.0"})).check(
        "tensorflow_build"
    )
    assert build.status is Status.OK
    assert "the tested build of 2.20, the newest in TensorFlow's tested configurations" in (
        build.verdict.found
    )


def test_two_tensorflow_packages_installed_together_is_a_warning():
    versions = {"tensorflow": "2.20.0", "tensorflow-cpu": "2.19.0"}
    packages = run_doctor(machine(versions=versions)).check("packages")
    assert packages.status is Status.WARNING
    assert packages.verdict.found.startswith("tensorflow and tensorflow-cpu are all installed")


def test_a_pytorch_user_is_not_told_to_install_tensorflow_and_no_child_imports_it():
    """Issue 14, 25, 24: Keras runs on PyTorch, so no TensorFlow is needed, and none is advised."""
    started = []
    report = run_doctor(
        machine(versions={"torch": "2.13.0"}, read_framework=started.append, tensorflow=None)
    )
    build = report.check("tensorflow_build")
    assert build.status is Status.OK
    assert build.verdict.found == "not installed, and not needed: Keras runs on PyTorch"
    assert build.verdict.remedies == ()
    ids = [check.id for check in report.checks]
    assert "tensorflow_gpu" not in ids
    assert "memory_settings" not in ids
    said = " ".join(c.verdict.found + " ".join(c.verdict.details) + steps(c) for c in report.checks)
    assert "pip install 'tensorflow" not in said
    assert started == ["torch"]  # PyTorch's GPUs are read; TensorFlow is never imported


def test_no_framework_at_all_is_a_warning():
    report = run_doctor(machine(versions={}, tensorflow=None))
    assert report.check("tensorflow_build").status is Status.WARNING


def test_a_framework_is_imported_only_for_a_check_that_needs_it_and_announced_first():
    events = []

    def read_framework(framework):
        events.append(("read", framework))
        return tensorflow_view()

    quick = [check for check in CHECKS if check[0] in ("python", "packages", "other_processes")]
    run_doctor(machine(read_framework=read_framework), announce=events.append, checks=quick)
    assert events == []
    run_doctor(machine(read_framework=read_framework), announce=events.append)
    assert len(events) == 2
    assert events[0].startswith("Importing TensorFlow in a child process")
    assert events[1] == ("read", "tensorflow")


def test_a_probe_that_raises_becomes_could_not_check_with_the_reason():
    def broken_metadata(distribution):
        raise RuntimeError("metadata database is corrupt")

    report = run_doctor(machine(version_of=broken_metadata))
    packages = report.check("packages")
    assert packages.status is Status.UNKNOWN
    assert packages.verdict.found == "the check raised RuntimeError: metadata database is corrupt"
    one_gpu = [check_id for check_id, _, _ in CHECKS if check_id != "gpu_numbers"]
    assert [check.id for check in report.checks] == one_gpu
    for check_id in ("python", "other_processes", "gpu_watchdog"):  # read no metadata
        assert report.check(check_id).status is Status.OK, check_id


def test_a_check_that_raises_becomes_could_not_check():
    def faulty(findings):
        raise KeyError("cuda_version")

    report = run_doctor(machine(), checks=[("faulty", "A faulty check", faulty), *CHECKS[:1]])
    assert report.check("faulty").status is Status.UNKNOWN
    assert report.check("faulty").verdict.found == "the check raised KeyError: 'cuda_version'"
    assert report.check("python").status is Status.OK


def framework_views(**views: FrameworkView):
    """The reader of a machine whose frameworks in a child saw ``views``."""
    return lambda framework: views[framework]


def test_numpy_2_under_a_tensorflow_built_for_numpy_1_is_named_as_the_cause():
    """Issue 24: TensorFlow 2.10 with the NumPy 2 pip picks by default fails to import."""
    broken = FrameworkView("tensorflow", import_error="AttributeError: _ARRAY_API not found")
    versions = {"tensorflow-cpu": "2.10.1", "numpy": "2.0.2", "tensorflow-directml-plugin": "0.4.0"}
    build = run_doctor(machine(versions=versions, tensorflow=broken)).check("tensorflow_build")
    assert build.status is Status.PROBLEM
    assert build.verdict.found == (
        "import tensorflow fails: TensorFlow 2.10.1 (tensorflow-cpu) was built for NumPy 1, and "
        "NumPy 2.0.2 is installed (AttributeError: _ARRAY_API not found)"
    )
    assert remedy_ids(build) == ["numpy_1_for_tensorflow"]
    assert "pip install 'numpy<2'" in steps(build)
    assert "uninstall" not in steps(build)


def test_numpy_2_is_not_blamed_under_a_tensorflow_built_for_it():
    broken = FrameworkView("tensorflow", import_error="ImportError: libcudnn.so.9: cannot open")
    versions = {"tensorflow": "2.18.0", "numpy": "2.1.0"}
    build = run_doctor(machine(versions=versions, tensorflow=broken)).check("tensorflow_build")
    assert remedy_ids(build) == ["install_matching_libraries"]


@pytest.mark.parametrize(
    ("release", "remedy", "advised", "never"),
    [
        (
            "2.13.1",
            "install_gpu_tensorflow_before_2_14",
            "pip install 'tensorflow==2.13.1'",
            "[and-cuda]==",
        ),
        ("2.14.0", "install_gpu_tensorflow", "pip install 'tensorflow[and-cuda]==2.14.0'", "conda"),
    ],
)
def test_and_cuda_is_advised_only_where_tensorflow_has_it(release, remedy, advised, never):
    """Issue 24: ``tensorflow[and-cuda]`` exists from TensorFlow 2.14 on."""
    cpu_build = {"is_cuda_build": False, "is_rocm_build": False}
    view = tensorflow_view(version=release, build=cpu_build, gpus=())
    report = run_doctor(machine(versions={"tensorflow-cpu": release}, tensorflow=view))
    uses_gpu = report.check("tensorflow_gpu")
    assert remedy_ids(uses_gpu) == [remedy]
    assert advised in steps(uses_gpu)
    assert never not in steps(uses_gpu)


def test_libraries_for_a_tensorflow_before_2_14_are_installed_without_and_cuda():
    build = {**CUDA_BUILD_211, "cudnn_version": "8"}  # Linux builds say the major alone
    view = tensorflow_view(version="2.11.1", build=build)
    report = run_doctor(machine(versions={"tensorflow": "2.11.1"}, tensorflow=view))
    libraries = report.check("cuda_libraries")
    assert libraries.status is Status.PROBLEM  # the machine's CUDA 12 is not the build's 11.2
    assert remedy_ids(libraries) == ["install_matching_libraries_before_2_14"]
    assert "conda install -c conda-forge cudatoolkit=11.2 cudnn=8.1" in steps(libraries)
    assert "and-cuda" not in steps(libraries)


CUDA_BUILD_211 = {"is_cuda_build": True, "is_rocm_build": False, "cuda_version": "11.2"}


@pytest.mark.parametrize(
    "view",
    [
        FrameworkView("tensorflow", import_error="ImportError: DLL load failed: the module"),
        FrameworkView("tensorflow", import_error="ModuleNotFoundError: No module named 'x'"),
    ],
)
def test_directmls_tensorflow_cpu_is_never_advised_away(view):
    """Issue 24: tensorflow-directml-plugin runs on tensorflow-cpu 2.10 and nothing else."""
    versions = {
        "tensorflow-cpu": "2.10.1",
        "tensorflow": "2.10.1",
        "numpy": "1.26.4",
        "tensorflow-directml-plugin": "0.4.0",
    }
    report = run_doctor(machine(platform="win32", versions=versions, tensorflow=view))
    advised = " ".join(steps(check) for check in report.checks)
    assert "uninstall -y tensorflow-cpu" not in advised
    assert "'tensorflow-cpu==2.10.0'" in steps(report.check("packages"))


def test_pytorchs_cuda_wheel_is_checked_against_the_driver_and_its_libraries():
    """Issue 24: PyTorch's CUDA wheel brings its CUDA; the doctor says what it loaded."""
    torch = FrameworkView(
        "torch",
        version="2.5.1+cu124",
        build={"cuda_version": "12.4", "cudnn_version": 90100, "is_cuda_build": True},
        gpus=("cuda:0 (NVIDIA A100-SXM4-80GB)",),
    )
    old_driver = make_fake_nvml([FakeGpu()], cuda_driver=11080)
    report = run_doctor(
        machine(
            versions={"torch": "2.5.1"},
            tensorflow=None,
            nvml=old_driver,
            read_framework=framework_views(torch=torch),
        )
    )
    libraries = report.check("cuda_libraries")
    assert libraries.status is Status.OK
    assert libraries.verdict.found == "PyTorch 2.5.1+cu124 loads CUDA 12.4 and cuDNN 9.1.0"
    driver = report.check("driver")
    assert driver.status is Status.PROBLEM
    assert "PyTorch 2.5.1+cu124 was built with CUDA 12.4, which this driver cannot run" in (
        driver.verdict.found
    )
    assert "CUDA 12.4 needs driver" in steps(driver)


@pytest.mark.parametrize(
    ("backend", "status", "found"),
    [
        ("gpu", Status.OK, "JAX 0.4.35 runs on the GPU with jax-cuda12-plugin 0.4.35"),
        (
            "cpu",
            Status.WARNING,
            "jax-cuda12-plugin 0.4.35 is installed, but JAX 0.4.35 runs on the cpu",
        ),
    ],
)
def test_jaxs_cuda_plugin_is_checked_without_tensorflow(backend, status, found):
    jax = FrameworkView("jax", version="0.4.35", build={"backend": backend})
    versions = {"jax": "0.4.35", "jax-cuda12-plugin": "0.4.35"}
    report = run_doctor(
        machine(versions=versions, tensorflow=None, read_framework=framework_views(jax=jax))
    )
    libraries = report.check("cuda_libraries")
    assert (libraries.status, libraries.verdict.found) == (status, found)
    assert report.check("tensorflow_build").verdict.found == (
        "not installed, and not needed: Keras runs on JAX"
    )


XID_LOG = """\
[ 1843.308145] NVRM: GPU at PCI:0000:01:00: GPU-af4f89ae-d08b-1b53-9938-c9ed209a3513
[22859.081860] NVRM: Xid (PCI:0000:01:00): 13, pid=14292, name=python, Graphics SM Warp Exception
[22859.081861] NVRM: Xid (PCI:0000:01:00): 109, pid=14292, name=python, CTX SWITCH TIMEOUT
[23203.142515] r8169 0000:03:00.0 eth0: RTL8125B, XID 641, IRQ 51
"""


def test_the_kernel_logs_xids_are_read_with_nvidias_catalog():
    """Issue 25: the catalog the diagnosis reads pasted Xids with, the doctor reads the log with."""
    check = run_doctor(machine(read_kernel_log=lambda: XID_LOG)).check("driver_errors")
    assert check.status is Status.WARNING
    assert "Xid 13 (Graphics engine exception)" in check.verdict.found
    assert check.verdict.details[:2] == (
        "Xid 13 (Graphics engine exception, fault): 1 time",
        "Xid 109 (Context switch timeout, hang): 1 time",
    )
    assert [remedy.id for remedy in check.verdict.remedies] == ["check_hardware", "update_driver"]


def test_a_gpu_that_fell_off_the_bus_is_a_problem_and_a_clean_log_is_ok():
    fallen = "NVRM: Xid (PCI:0000:44:00): 79, pid=1, GPU has fallen off the bus."
    assert run_doctor(machine(read_kernel_log=lambda: fallen)).check("driver_errors").status is (
        Status.PROBLEM
    )
    clean = run_doctor(machine(read_kernel_log=lambda: "[    0.000000] Linux version 6.1\n"))
    assert clean.check("driver_errors").status is Status.OK


def test_a_kernel_log_this_user_may_not_read_says_how_to_look_and_windows_has_no_row():
    unreadable = run_doctor(machine(read_kernel_log=lambda: None)).check("driver_errors")
    assert unreadable.status is Status.UNKNOWN
    assert "sudo dmesg | grep -i xid" in unreadable.verdict.found
    windows = run_doctor(machine(platform="win32", read_kernel_log=lambda: XID_LOG))
    assert "driver_errors" not in [check.id for check in windows.checks]


def test_the_kernel_log_is_read_by_the_first_command_allowed_to(monkeypatch):
    from ipy_gpuguard.doctor import machine as machine_module

    monkeypatch.setattr(
        machine_module,
        "KERNEL_LOG_COMMANDS",
        (("false",), ("no-such-command-here",), ("echo", "NVRM: Xid (PCI:0000:01:00): 31")),
    )
    assert machine_module.read_kernel_log() == "NVRM: Xid (PCI:0000:01:00): 31\n"
    monkeypatch.setattr(machine_module, "KERNEL_LOG_COMMANDS", (("false",),))
    assert machine_module.read_kernel_log() is None


def test_keras_on_jax_is_told_of_jaxs_preallocation_not_tensorflows_memory_growth():
    """A Keras-on-JAX person, TensorFlow installed for tf.data, was told to call
    tf.config.experimental.set_memory_growth and set TF_GPU_ALLOCATOR."""
    shared = FakeGpu(processes=[(4242, 30 * GIB)])
    memory = run_doctor(machine(gpus=[shared], environ={"KERAS_BACKEND": "jax"})).check(
        "memory_settings"
    )
    assert memory.status is Status.WARNING
    assert memory.verdict.found.startswith("JAX preallocates on a shared GPU (GPU 0: pid 4242")
    assert remedy_ids(memory) == ["memory_growth"]
    assert "XLA_PYTHON_CLIENT_PREALLOCATE=false" in steps(memory)
    assert "set_memory_growth" not in steps(memory)
    assert "TF_GPU_ALLOCATOR" not in steps(memory)
    off = {"KERAS_BACKEND": "jax", "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
    fine = run_doctor(machine(gpus=[shared], environ=off)).check("memory_settings")
    assert (fine.status, fine.verdict.found) == (Status.OK, "JAX preallocation off")


def test_the_imported_keras_says_its_backend_over_the_environment():
    config = types.ModuleType("keras.src.backend.config")
    config.backend = lambda: "jax"  # set by keras.config.set_backend, or keras.json
    modules = {"keras.src.backend.config": config}
    report = run_doctor(machine(environ={"KERAS_BACKEND": "tensorflow"}, modules=modules))
    assert report.check("memory_settings").verdict.found == "JAX preallocates 75%"


def test_a_backend_named_in_keras_json_is_the_one_keras_will_train_on(tmp_path):
    """Before ``import keras``, a backend chosen in ``keras.json`` (where Keras looks for it:
    ``$KERAS_HOME``) was not seen: a Keras-on-JAX person was told of TensorFlow's memory
    growth."""
    (tmp_path / "keras.json").write_text('{"backend": "jax", "floatx": "float32"}')
    config = read_keras_config({"KERAS_HOME": str(tmp_path)})
    report = run_doctor(machine(keras_config=config))
    assert report.check("memory_settings").verdict.found == "JAX preallocates 75%"
    assert "keras.json names the backend jax" in report.check("packages").verdict.details
    overridden = run_doctor(machine(keras_config=config, environ={"KERAS_BACKEND": "tensorflow"}))
    assert overridden.check("memory_settings").verdict.found != "JAX preallocates 75%"
    assert (
        "keras.json names the backend jax, which KERAS_BACKEND=tensorflow overrides"
        in overridden.check("packages").verdict.details
    )


@pytest.mark.parametrize(
    "text",
    [None, "{not json", '["jax"]', '{"backend": 3}', "[" * 30_000 + "]" * 30_000],
)
def test_a_missing_or_broken_keras_json_names_no_backend(tmp_path, text):
    if text is not None:
        (tmp_path / "keras.json").write_text(text)
    config = read_keras_config({"KERAS_HOME": str(tmp_path)})
    assert machine(keras_config=config).configured_keras_backend is None
    assert not (tmp_path / "keras.json").exists() or text is not None  # never written


@pytest.mark.parametrize("kind", ["pipe", "device", "folder", "large"])
def test_a_keras_json_that_is_no_small_file_is_never_waited_on(tmp_path, kind):
    """A pipe there would block the doctor for ever, ``/dev/zero`` fill its memory, and a
    nesting deep enough a RecursionError printed its traceback."""
    path = tmp_path / "keras.json"
    if kind == "pipe":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    elif kind == "folder":
        path.mkdir()
    else:
        path.write_text('{"backend": "jax", "note": "%s"}' % ("x" * 100_000))
    assert read_keras_config({"KERAS_HOME": str(tmp_path)}) == {}


@pytest.mark.parametrize(
    ("environ", "config", "found"),
    [
        ({"KERAS_BACKEND": "pytorch"}, {}, "KERAS_BACKEND names the backend 'pytorch'"),
        ({}, {"backend": "pytorch"}, "keras.json names the backend 'pytorch'"),
    ],
)
def test_a_backend_keras_does_not_know_is_a_warning(environ, config, found):
    packages = run_doctor(machine(environ=environ, keras_config=config)).check("packages")
    assert packages.status is Status.WARNING
    assert packages.verdict.found == (
        f"{found}, which Keras 3.10.0 does not know (tensorflow, jax, torch, numpy, openvino): "
        "import keras fails"
    )
    fine = run_doctor(machine(environ={"KERAS_BACKEND": "torch"}, keras_config=config))
    assert fine.check("packages").status is Status.OK  # KERAS_BACKEND comes first


def test_keras_json_and_keras_backend_that_agree_are_not_said_to_override():
    report = run_doctor(machine(environ={"KERAS_BACKEND": "jax"}, keras_config={"backend": "jax"}))
    assert "keras.json names the backend jax" in report.check("packages").verdict.details


FAST, SLOW = "NVIDIA GeForce RTX 4090", "NVIDIA GeForce GTX 1080 Ti"


def two_gpus(framework_order, **changes):
    """A workstation whose slower GPU sits first on the PCI bus; TensorFlow lists its GPUs in
    ``framework_order``."""
    gpus = [FakeGpu(name=SLOW, uuid="GPU-1"), FakeGpu(name=FAST, uuid="GPU-2")]
    listed = tuple(f"/physical_device:GPU:{i} ({name})" for i, name in enumerate(framework_order))
    view = tensorflow_view(gpus=listed, gpu_names=tuple(framework_order))
    return machine(gpus=gpus, tensorflow=view, **changes)


def test_a_framework_that_numbers_the_gpus_otherwise_than_the_driver_is_a_warning_with_its_fix():
    numbers = run_doctor(two_gpus([FAST, SLOW])).check("gpu_numbers")
    assert numbers.status is Status.WARNING
    assert numbers.verdict.found.startswith(
        f"TensorFlow's GPU:0 is the {FAST}, the driver's GPU 0 the {SLOW}"
    )
    assert f"the driver (PCI bus order): GPU 0 {SLOW}; GPU 1 {FAST}" in numbers.verdict.details
    assert remedy_ids(numbers) == ["number_gpus_by_pci_bus"]
    assert "%env CUDA_DEVICE_ORDER=PCI_BUS_ID" in steps(numbers)


def test_gpus_numbered_by_pci_bus_or_alike_or_in_the_drivers_order_are_well():
    by_bus = two_gpus([SLOW, FAST], environ={"CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
    assert run_doctor(by_bus).check("gpu_numbers").status is Status.OK
    same_order = run_doctor(two_gpus([SLOW, FAST])).check("gpu_numbers").verdict
    assert (same_order.status, same_order.found) == (
        Status.OK,
        "TensorFlow number the GPUs as the driver does",
    )
    alike = machine(
        gpus=[FakeGpu(uuid="GPU-1"), FakeGpu(uuid="GPU-2")], tensorflow=tensorflow_view(gpus=())
    )
    assert run_doctor(alike).check("gpu_numbers").status is Status.OK


def test_gpus_of_different_models_that_no_framework_lists_are_a_warning():
    unread = two_gpus([])  # TensorFlow's CPU build: it lists none
    numbers = run_doctor(unread).check("gpu_numbers")
    assert numbers.status is Status.WARNING
    assert "CUDA numbers the fastest first" in numbers.verdict.found
    assert remedy_ids(numbers) == ["number_gpus_by_pci_bus"]
