"""Checks of the software: Python, the installed frameworks, and TensorFlow's build."""

from __future__ import annotations

from ..diagnosis.builds import SOURCE, TESTED_BUILDS, TRANSCRIBED
from ..diagnosis.context import TENSORFLOW_DISTRIBUTIONS
from .findings import Findings, version_text, version_tuple
from .model import Status, Verdict

#: What the packages row lists, by what a person calls it; the first installed name counts.
_PACKAGES = (
    ("TensorFlow", TENSORFLOW_DISTRIBUTIONS),
    ("Keras", ("keras", "tf-keras")),
    ("TensorFlow DirectML", ("tensorflow-directml-plugin", "tensorflow-directml")),
    ("PyTorch", ("torch",)),
    ("JAX", ("jax", "jaxlib")),
)
#: Said to be missing when they are; DirectML is named only where it is installed.
_NAMED_WHEN_MISSING = ("TensorFlow", "Keras", "PyTorch", "JAX")
#: JAX's CUDA: a plugin package, with CUDA and cuDNN from pip's nvidia-* packages.
JAX_CUDA_PLUGINS = ("jax-cuda12-plugin", "jax-cuda13-plugin", "jax-cuda11-plugin")
#: CUDA from pip: the libraries TensorFlow's and PyTorch's Linux wheels load first, and JAX's.
_PIP_CUDA = (
    *JAX_CUDA_PLUGINS,
    "nvidia-cuda-runtime-cu12",
    "nvidia-cudnn-cu12",
    "nvidia-cuda-runtime-cu11",
    "nvidia-cudnn-cu11",
)
_DIRECTML = ("tensorflow-directml-plugin", "tensorflow-directml")
#: The first TensorFlow built for NumPy 2.
NUMPY_2_SINCE = (2, 18)


def python_and_platform(findings: Findings) -> Verdict:
    machine = findings.machine
    if "microsoft" not in machine.description.lower():
        return Verdict(Status.OK, machine.description)
    wsl = (
        "WSL2: the GPU is reached through the Windows driver; install or update the driver on "
        "Windows, never inside Linux."
    )
    return Verdict(Status.OK, machine.description, (wsl,))


def packages(findings: Findings) -> Verdict:
    version_of = findings.machine.version_of
    installed: list[str] = []
    missing: list[str] = []
    for label, distributions in _PACKAGES:
        versions = [(name, version_of(name)) for name in distributions]
        present = [f"{name} {version}" for name, version in versions if version is not None]
        if present:
            installed += present
        elif label in _NAMED_WHEN_MISSING:
            missing.append(label)
    pip_cuda = [f"{name} {version_of(name)}" for name in _PIP_CUDA if version_of(name)]
    details = [f"CUDA from pip: {', '.join(pip_cuda)}"] if pip_cuda else []
    backend = findings.machine.environ.get("KERAS_BACKEND")
    if backend:
        details.append(f"KERAS_BACKEND={backend}")
    configured = findings.machine.configured_keras_backend
    if configured:
        over = (
            f", which KERAS_BACKEND={backend} overrides"
            if backend not in (None, "", configured)
            else ""
        )
        details.append(f"keras.json names the backend {configured}{over}")
    found = ", ".join(installed) or "none of TensorFlow, Keras, PyTorch, JAX"
    if missing and installed:
        found += f"; not installed: {', '.join(missing)}"
    tensorflows = [name for name in TENSORFLOW_DISTRIBUTIONS if version_of(name) is not None]
    if len(tensorflows) > 1:
        return Verdict(
            Status.WARNING,
            f"{' and '.join(tensorflows)} are all installed: they write the same files, and "
            f"the one installed last wins ({found})",
            tuple(details),
            findings.remedies("install_gpu_tensorflow"),
        )
    unknown = _unknown_keras_backend(findings)
    if unknown:
        return Verdict(Status.WARNING, unknown, tuple(details))
    return Verdict(Status.OK, found, tuple(details))


#: The backends Keras 3 imports: with any other name, ``import keras`` fails.
KERAS_BACKENDS = ("tensorflow", "jax", "torch", "numpy", "openvino")


def _unknown_keras_backend(findings: Findings) -> str | None:
    """Why ``import keras`` will fail, where ``KERAS_BACKEND`` (or, without it, ``keras.json``)
    names a backend Keras 3 does not know ("pytorch" for "torch")."""
    machine = findings.machine
    installed = version_tuple(machine.version_of("keras") or "")
    if installed is None or installed < (3,):
        return None
    environ = machine.environ.get("KERAS_BACKEND")
    named, where = (
        (environ, "KERAS_BACKEND") if environ else (machine.configured_keras_backend, "keras.json")
    )
    if named is None or named in KERAS_BACKENDS:
        return None
    return (
        f"{where} names the backend {named!r}, which Keras {version_text(installed)} does not "
        f"know ({', '.join(KERAS_BACKENDS)}): import keras fails"
    )


#: The frameworks Keras 3 runs on besides TensorFlow: with one of them, TensorFlow is optional.
_OTHER_BACKENDS = (("torch", "PyTorch"), ("jax", "JAX"))
#: Said once, in the build's row, when TensorFlow is not installed; its other rows are left out.
NOT_INSTALLED = (
    "TensorFlow is not installed; its GPU build installs with pip install "
    "'tensorflow[and-cuda]' (Linux and WSL2; it brings matching CUDA and cuDNN)"
)


def tensorflow_build(findings: Findings) -> Verdict:
    installed = findings.installed("tensorflow")
    if installed is None:
        version_of = findings.machine.version_of
        others = [label for name, label in _OTHER_BACKENDS if version_of(name) is not None]
        if others:  # Keras runs on these as well: nothing is wrong, nothing to install
            return Verdict(
                Status.OK, f"not installed, and not needed: Keras runs on {' and '.join(others)}"
            )
        return Verdict(Status.WARNING, NOT_INSTALLED)
    view = findings.tensorflow
    assert view is not None
    if view.failure is not None:
        return Verdict(
            Status.UNKNOWN,
            f"{view.failure}",
            view.messages,
        )
    name = f"TensorFlow {view.version or installed[1]} ({installed[0]})"
    numpy = _numpy_2_under_numpy_1_build(findings)
    if view.import_error is not None and numpy is not None:
        return Verdict(
            Status.PROBLEM,
            f"import tensorflow fails: {name} was built for NumPy 1, and NumPy {numpy} is "
            f"installed ({view.import_error})",
            view.messages,
            findings.remedies("numpy_1_for_tensorflow"),
        )
    if view.import_error is not None:
        library = any(word in view.import_error for word in (".so", ".dll", "DLL load"))
        return Verdict(
            Status.PROBLEM,
            f"import tensorflow fails: {view.import_error}",
            view.messages,
            findings.remedies(
                "install_matching_libraries" if library else "install_gpu_tensorflow"
            ),
        )
    build = view.build
    if not build.get("is_cuda_build"):
        kind = "a ROCm build" if build.get("is_rocm_build") else "a CPU-only build"
        plugin = _directml_plugin(findings)
        if plugin:
            kind += f", with {plugin} for DirectML GPUs"
        return Verdict(Status.OK, f"{name}, {kind}")
    return _cuda_build(findings, name)


def _cuda_build(findings: Findings, name: str) -> Verdict:
    cuda = findings.build_version("cuda_version")
    cudnn = findings.build_version("cudnn_version")
    built = f"built with CUDA {version_text(cuda or ())} and cuDNN {version_text(cudnn or ())}"
    tested = findings.tested
    table = f"TensorFlow's tested configurations ({SOURCE}, transcribed {TRANSCRIBED})"
    if tested is None:
        return Verdict(
            Status.OK,
            f"{name}, {built}; its release is older than any in {table}",
        )
    release = version_tuple(findings.tensorflow_version or "") or ()
    newest = version_tuple(TESTED_BUILDS[0].tensorflow) or ()
    reference = f"the tested build of {tested.tensorflow}"
    if release[:2] > newest:
        reference += f", the newest in {table}"
    tested_cuda = version_tuple(tested.cuda) or ()
    tested_cudnn = version_tuple(tested.cudnn) or ()
    if (cuda or ())[:2] == tested_cuda[:2] and (cudnn or ())[:1] == tested_cudnn[:1]:
        return Verdict(
            Status.OK,
            f"{name}, {built}, as {reference} (CUDA {tested.cuda}, cuDNN {tested.cudnn})",
        )
    return Verdict(
        Status.WARNING,
        f"{name}, {built}, where {reference} uses CUDA {tested.cuda} and cuDNN {tested.cudnn}: "
        "a build from elsewhere (conda-forge, a distribution, your own), which needs libraries "
        "matching its own versions",
        remedies=findings.remedies("install_matching_libraries"),
    )


def tensorflow_uses_gpu(findings: Findings) -> Verdict | None:
    """A CPU-only TensorFlow on a machine with a GPU never uses it, whatever else is right;
    ``None`` (no row) without TensorFlow, which the build's row says."""
    installed = findings.installed("tensorflow")
    view = findings.tensorflow
    if installed is None or view is None:
        return None
    if not view.usable:
        return Verdict(
            Status.UNKNOWN,
            "TensorFlow could not be read (see its build)",
        )
    build = view.build
    if build.get("is_cuda_build"):
        return Verdict(Status.OK, f"a CUDA build (CUDA {build.get('cuda_version')})")
    if build.get("is_rocm_build"):
        return Verdict(Status.OK, "a ROCm build, for AMD GPUs")
    plugin = _directml_plugin(findings)
    if plugin:
        return Verdict(Status.OK, f"GPUs through DirectML ({plugin})")
    gpus = findings.nvml.gpus
    name = f"TensorFlow {view.version} ({installed[0]})"
    if not gpus:
        return Verdict(
            Status.OK,
            f"{name} is a CPU-only build, and the driver reports no NVIDIA GPU for it to use",
        )
    listed = ", ".join(f"GPU {gpu.index} {gpu.name}" for gpu in gpus)
    return Verdict(
        Status.PROBLEM,
        f"{name} is a CPU-only build, on a machine with an NVIDIA GPU ({listed}): "
        f"{_why_cpu_only(findings, installed[0])}",
        remedies=findings.remedies("install_gpu_tensorflow"),
    )


def _directml_plugin(findings: Findings) -> str | None:
    """The DirectML package that gives a CPU build of TensorFlow its GPUs, if installed."""
    return next((name for name in _DIRECTML if findings.machine.version_of(name)), None)


def _numpy_2_under_numpy_1_build(findings: Findings) -> str | None:
    """The NumPy 2 version installed under a TensorFlow built for NumPy 1 (before 2.18), if so.
    Such a TensorFlow fails to import in ways that never name the versions (``_ARRAY_API not
    found``, ``Unable to convert function return value``), so the versions decide."""
    numpy = findings.machine.version_of("numpy")
    release = version_tuple(findings.tensorflow_version or "") or ()
    numpy_release = version_tuple(numpy or "") or ()
    if numpy_release[:1] >= (2,) and release[:2] < NUMPY_2_SINCE:
        return numpy
    return None


def _why_cpu_only(findings: Findings, distribution: str) -> str:
    release = version_tuple(findings.tensorflow_version or "") or ()
    if distribution == "tensorflow-cpu":
        return "tensorflow-cpu is the package without GPU support"
    if findings.machine.platform == "win32" and release[:2] >= (2, 11):
        return "TensorFlow 2.11 and later has no GPU build for native Windows"
    if findings.machine.platform == "darwin":
        return "on macOS TensorFlow reaches the GPU only through tensorflow-metal"
    return "this package was built without CUDA"
