"""Checks of the GPUs and what runs them: the driver, the CUDA libraries, who sees which GPU."""

from __future__ import annotations

from ..diagnosis import FactValue, Remedy
from ..diagnosis.builds import min_driver
from ..telemetry.nvml_driver import NvmlGpu
from ..telemetry.units import format_bytes
from .check_software import JAX_CUDA_PLUGINS, tensorflow_uses_gpu
from .findings import Findings, version_text, version_tuple
from .frameworks import FrameworkView
from .libraries import LoadedLibrary, cudnn_version
from .model import Status, Verdict


def driver(findings: Findings) -> Verdict:
    """The driver against the CUDA TensorFlow was built with: each CUDA needs a minimum driver."""
    nvml = findings.nvml
    if nvml.problem is not None:
        return Verdict(Status.UNKNOWN, nvml.problem)
    found = f"driver {nvml.driver or 'of unknown version'}"
    if nvml.cuda is not None:
        found += f", which runs CUDA up to {nvml.cuda_text}"
    if findings.cuda_build:
        cuda = findings.build_version("cuda_version")
        built = f"TensorFlow {findings.tensorflow_version}"
        fields = findings.fields()
    else:  # PyTorch's CUDA wheels need a driver as much as TensorFlow's do
        cuda, built, fields = _torch_cuda(findings)
    if cuda is None or nvml.cuda is None:
        return Verdict(Status.OK, found)
    needs = f"{built} was built with CUDA {version_text(cuda)}"
    minimum = fields.get("min_driver")
    too_old = (
        findings.machine.platform == "linux"
        and isinstance(minimum, str)
        and (version_tuple(nvml.driver or "") or ()) < (version_tuple(minimum) or ())
    )
    if nvml.cuda[0] < cuda[0] or too_old:
        return Verdict(
            Status.PROBLEM,
            f"{found}; {needs}, which this driver cannot run",
            remedies=findings.remedies("update_driver_for_cuda", **fields),
        )
    if nvml.cuda < cuda[:2]:
        return Verdict(
            Status.WARNING,
            f"{found}; {needs}: it runs through CUDA's minor-version compatibility, but kernels "
            "XLA compiles for this GPU (PTX) may need a newer driver",
            remedies=findings.remedies("update_driver_for_cuda", "ptx_toolchain", **fields),
        )
    return Verdict(Status.OK, f"{found}; {needs}")


def cuda_libraries(findings: Findings) -> Verdict:
    """The CUDA runtime and cuDNN that load, against the versions TensorFlow was built with."""
    if not findings.cuda_build:
        return _libraries_of_other_frameworks(findings)
    runtime, cudnn = findings.cuda_runtime, findings.cudnn
    details = tuple(_library_line(library) for library in (runtime, cudnn))
    problems = [
        problem
        for problem in (_runtime_problem(findings, runtime), _cudnn_problem(findings, cudnn))
        if problem
    ]
    if problems:
        return Verdict(
            Status.PROBLEM,
            "; ".join(problems),
            details,
            findings.remedies("install_matching_libraries"),
        )
    return Verdict(
        Status.OK,
        f"CUDA runtime {runtime.version_text} and cuDNN {cudnn.version_text} load, as TensorFlow "
        "needs",
        details,
    )


def _torch_cuda(findings: Findings) -> tuple[tuple[int, ...] | None, str, dict[str, FactValue]]:
    """The CUDA a CUDA build of PyTorch was built with, its name, and the remedies' fields."""
    view = findings.torch
    if view is None or not view.usable or not view.build.get("is_cuda_build"):
        return None, "", {}
    cuda = version_tuple(str(view.build.get("cuda_version") or ""))
    fields: dict[str, FactValue] = {}
    if cuda:
        fields["build_cuda"] = version_text(cuda[:2])
        minimum = min_driver(version_text(cuda[:2]))
        if minimum:
            fields["min_driver"] = minimum
    return cuda, f"PyTorch {view.version}", fields


def _libraries_of_other_frameworks(findings: Findings) -> Verdict:
    """Without TensorFlow's CUDA build, the CUDA of PyTorch's and JAX's wheels, which bring and
    load their own (pip's nvidia-* packages): what they loaded, or that none needs any."""
    torch, jax = findings.torch, findings.jax
    found: list[str] = []
    problems: list[str] = []
    troubled: list[str] = []  # the module of each framework with a problem, in that order
    if torch is not None and torch.usable and torch.build.get("is_cuda_build"):
        cudnn = torch.build.get("cudnn_version")
        cuda = torch.build.get("cuda_version")
        if cudnn:
            found.append(
                f"PyTorch {torch.version} loads CUDA {cuda} and cuDNN {_cudnn_text(cudnn)}"
            )
        else:
            problems.append(
                f"PyTorch {torch.version} is a CUDA {cuda} build, but its cuDNN does not load"
            )
            troubled.append("torch")
    plugin = next(
        (
            f"{name} {findings.machine.version_of(name)}"
            for name in JAX_CUDA_PLUGINS
            if findings.machine.version_of(name)
        ),
        None,
    )
    if jax is not None and jax.usable and plugin is not None:
        if jax.build.get("backend") == "gpu":
            found.append(f"JAX {jax.version} runs on the GPU with {plugin}")
        else:
            problems.append(
                f"{plugin} is installed, but JAX {jax.version} runs on the {jax.build.get('backend', 'CPU')}"
            )
            troubled.append("jax")
    details = tuple(
        f"{label} says: {message}"
        for label, view in (("PyTorch", torch), ("JAX", jax))
        if view is not None
        for message in view.messages
    )
    if problems:
        return Verdict(
            Status.WARNING,
            "; ".join(problems + found),
            details,
            # the first framework with a problem names the remedy's spelling
            findings.remedies_for(troubled[0], ("check_gpu_visible",), {}),
        )
    if found:
        return Verdict(Status.OK, "; ".join(found), details)
    return Verdict(Status.OK, "not needed: no framework here is a CUDA build")


def _cudnn_text(version: object) -> str:
    """PyTorch's ``cudnn.version()``, the number ``cudnnGetVersion()`` gives, as text."""
    if not isinstance(version, int):
        return str(version)
    return version_text(cudnn_version(version))


def _library_line(library: LoadedLibrary) -> str:
    if library.path is None:
        return f"{library.name}: {library.problem}"
    version = library.version_text or f"version unknown: {library.problem}"
    return f"{library.name} {version}: {library.path}"


def _runtime_problem(findings: Findings, runtime: LoadedLibrary) -> str | None:
    built = findings.build_version("cuda_version") or ()
    if runtime.version is None:
        return f"the CUDA runtime: {runtime.problem}"
    if built and runtime.version[0] != built[0]:
        return (
            f"CUDA runtime {runtime.version_text} is loaded, but TensorFlow was built with CUDA "
            f"{version_text(built)}"
        )
    return None


def _cudnn_problem(findings: Findings, cudnn: LoadedLibrary) -> str | None:
    """cuDNN must have the build's major version and an equal or newer minor one."""
    built = findings.build_version("cudnn_version") or ()
    if cudnn.version is None:
        return f"cuDNN: {cudnn.problem}"
    if not built:
        return None
    tested = version_tuple(findings.tested.cudnn) if findings.tested else None
    needed = tested if tested and tested[0] == built[0] else built
    if cudnn.version[0] != needed[0] or cudnn.version[: len(needed)] < needed:
        return (
            f"cuDNN {cudnn.version_text} is loaded, but TensorFlow {findings.tensorflow_version} "
            f"needs cuDNN {version_text(needed)} or a newer {needed[0]}.x"
        )
    return None


def gpus_seen(findings: Findings) -> Verdict:
    """Which GPUs the driver, ``CUDA_VISIBLE_DEVICES`` and each framework see."""
    nvml = findings.nvml
    details = _seen_lines(findings)
    tensorflow = findings.tensorflow
    tf_gpus = len(tensorflow.gpus) if tensorflow is not None and tensorflow.usable else None
    if nvml.problem is not None:
        if tf_gpus:
            without_nvml = f"TensorFlow sees {_count(tf_gpus, 'GPU')} without NVML"
            return Verdict(Status.OK, without_nvml, (f"NVML: {nvml.problem}", *details))
        return Verdict(
            Status.PROBLEM,
            f"no GPU: {nvml.problem}",
            details,
            findings.remedies("check_gpu_visible"),
        )
    if not nvml.gpus:
        return Verdict(
            Status.PROBLEM,
            "no GPU: the NVIDIA driver is loaded but reports no GPU",
            details,
            findings.remedies("check_gpu_visible"),
        )
    visible = nvml.visible_gpus()
    if not visible:
        setting = findings.machine.environ.get("CUDA_VISIBLE_DEVICES")
        return Verdict(
            Status.PROBLEM,
            f"CUDA_VISIBLE_DEVICES={setting!r} hides all {_count(len(nvml.gpus), 'GPU')} the driver sees",
            details,
            findings.remedies("check_gpu_visible"),
        )
    found = f"{_count(len(visible), 'GPU')} visible to CUDA frameworks"
    if tf_gpus is None or tf_gpus >= len(visible):
        if tf_gpus is not None:
            found += f", and TensorFlow sees {'it' if tf_gpus == 1 else 'them'}"
        return Verdict(Status.OK, found, details)
    cause, remedies = _why_tensorflow_sees_fewer(findings)
    status = Status.PROBLEM if tf_gpus == 0 else Status.WARNING
    return Verdict(
        status,
        f"the driver sees {_count(len(visible), 'visible GPU')} but TensorFlow sees "
        f"{tf_gpus or 'none'}: {cause}",
        details,
        remedies,
    )


#: ``CUDA_DEVICE_ORDER``'s value that numbers GPUs by PCI bus, as the driver and NVML do.
PCI_BUS_ORDER = "PCI_BUS_ID"


def gpu_numbers(findings: Findings) -> Verdict | None:
    """Whether the guard's GPU numbers are each framework's. The guard numbers GPUs as NVML
    does, by PCI bus; CUDA numbers the fastest first unless ``CUDA_DEVICE_ORDER`` says
    otherwise, so with GPUs of different models a framework's ``GPU:0`` may be the driver's
    GPU 1, and the panel, the forecast and ``--devices`` would read another GPU than the one
    training. No row with fewer than two visible GPUs."""
    nvml = findings.nvml
    visible = nvml.visible_gpus() if nvml.problem is None else ()
    if len(visible) < 2:
        return None
    if findings.machine.environ.get("CUDA_DEVICE_ORDER") == PCI_BUS_ORDER:
        return Verdict(
            Status.OK, "CUDA numbers the GPUs as the driver does (CUDA_DEVICE_ORDER=PCI_BUS_ID)"
        )
    driver_names = tuple(gpu.name for gpu in visible)
    details = [f"the driver (PCI bus order): {_numbered(driver_names, 'GPU ')}"]
    compared = []
    for label, view in _framework_views(findings):
        names = view.gpu_names
        if len(names) != len(driver_names):
            continue  # another framework's view of the GPUs, or none: nothing to match
        details.append(f"{label}: {_numbered(names, 'GPU:')}")
        compared.append(label)
        moved = next(
            (index for index, name in enumerate(names) if name != driver_names[index]), None
        )
        if moved is not None:
            return Verdict(
                Status.WARNING,
                f"{label}'s GPU:{moved} is the {names[moved]}, the driver's GPU {moved} the "
                f"{driver_names[moved]}: the guard would read another GPU than {label}'s",
                tuple(details),
                findings.remedies("number_gpus_by_pci_bus"),
            )
    if compared:
        return Verdict(
            Status.OK,
            f"{' and '.join(compared)} number the GPUs as the driver does",
            tuple(details),
        )
    if len(set(driver_names)) == 1:
        return Verdict(
            Status.OK, f"the {len(visible)} GPUs are alike: CUDA numbers them as the driver does"
        )
    return Verdict(
        Status.WARNING,
        "GPUs of different models, and CUDA numbers the fastest first (CUDA_DEVICE_ORDER is "
        "not PCI_BUS_ID): a framework's GPU:0 may be another GPU than the driver's GPU 0, which "
        "the guard reads",
        tuple(details),
        findings.remedies("number_gpus_by_pci_bus"),
    )


def _framework_views(findings: Findings) -> list[tuple[str, FrameworkView]]:
    """The frameworks that were read, by the names a person knows them by."""
    views = (
        ("TensorFlow", findings.tensorflow),
        ("PyTorch", findings.torch),
        ("JAX", findings.jax),
    )
    return [(label, view) for label, view in views if view is not None and view.usable]


def _numbered(names: tuple[str, ...], prefix: str) -> str:
    return "; ".join(f"{prefix}{index} {name}" for index, name in enumerate(names))


def _why_tensorflow_sees_fewer(findings: Findings) -> tuple[str, tuple[Remedy, ...]]:
    """The likely cause, most specific first: the build, the libraries, the driver, the log."""
    for verdict in (tensorflow_uses_gpu(findings), cuda_libraries(findings), driver(findings)):
        if verdict is not None and verdict.status is Status.PROBLEM:
            return verdict.found, verdict.remedies
    view = findings.tensorflow
    messages = view.messages if view is not None else ()
    architecture = [m for m in messages if "Ignoring visible gpu device" in m]
    if architecture:
        return architecture[-1], findings.remedies("match_gpu_architecture")
    if messages:
        return f"TensorFlow says: {messages[-1]}", findings.remedies(
            "install_matching_libraries", "check_gpu_visible"
        )
    return "TensorFlow gave no reason", findings.remedies("check_gpu_visible")


def _seen_lines(findings: Findings) -> tuple[str, ...]:
    nvml = findings.nvml
    environ = findings.machine.environ
    lines = []
    if nvml.problem is None:  # else the row's finding says why
        gpus = "; ".join(_gpu_text(gpu) for gpu in nvml.gpus) or "none"
        lines.append(f"the driver (NVML): {gpus}")
    for variable in ("CUDA_VISIBLE_DEVICES", "DML_VISIBLE_DEVICES"):
        if variable in environ:
            lines.append(f"{variable}={environ[variable]!r}")
    for label, view in (
        ("TensorFlow", findings.tensorflow),
        ("PyTorch", findings.torch),
        ("JAX", findings.jax),
    ):
        if view is None:
            continue
        if view.failure or view.import_error:
            lines.append(f"{label}: could not check: {view.failure or view.import_error}")
        else:
            lines.append(f"{label} {view.version}: {', '.join(view.gpus) or _no_gpu(view)}")
            lines += [f"{label} says: {message}" for message in view.messages]
    return tuple(lines)


def _no_gpu(view: FrameworkView) -> str:
    gpu_build = any(view.build.get(key) for key in ("is_cuda_build", "is_rocm_build"))
    return "no GPU" if gpu_build or not view.build else "no GPU (a CPU-only build)"


def _gpu_text(gpu: NvmlGpu) -> str:
    memory = f", {format_bytes(gpu.total_bytes)}" if gpu.total_bytes else ""
    return f"GPU {gpu.index} {gpu.name}{memory}"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
