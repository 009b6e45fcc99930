"""The facts several checks share, each read once and only when a check first asks for it.

Reading TensorFlow means importing it in a child process, which takes seconds: it happens only
when a check needs it, and :attr:`Findings.announce` says so first. Readers never raise for
what they cannot read; they return it as a reason, which checks turn into "could not check".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import cached_property

from ..diagnosis import FactValue, Remedy
from ..diagnosis.builds import BuildConfiguration, build_fields, tested_build
from ..diagnosis.context import TENSORFLOW_DISTRIBUTIONS
from ..diagnosis.remedies import SEE_DOCTOR, resolved
from ..diagnosis.stack import Stack, Vendor, stack_of_modules
from ..telemetry import DeviceInfo
from ..telemetry.framework import FrameworkSettings, tensorflow_settings
from ..telemetry.nvml_driver import NvmlFacts, read_nvml
from ..watchdog.gpu_timeout import GpuTimeout, SystemTimeoutProbe
from .frameworks import FrameworkView
from .libraries import LoadedLibrary, load_cuda_runtime, load_cudnn
from .machine import Machine

_FRAMEWORK_NAMES = {"tensorflow": "TensorFlow", "torch": "PyTorch", "jax": "JAX"}
_DISTRIBUTIONS = {"tensorflow": TENSORFLOW_DISTRIBUTIONS, "torch": ("torch",), "jax": ("jax",)}


class Findings:
    """The machine's facts, read on first use and then kept."""

    def __init__(self, machine: Machine, announce: Callable[[str], None]) -> None:
        self.machine = machine
        self.announce = announce

    @cached_property
    def nvml(self) -> NvmlFacts:
        machine = self.machine
        return read_nvml(
            machine.open_nvml, machine.environ.get("CUDA_VISIBLE_DEVICES"), machine.pid
        )

    def installed(self, framework: str) -> tuple[str, str] | None:
        """``(distribution, version)`` of the framework's installed package, if any."""
        for distribution in _DISTRIBUTIONS[framework]:
            version = self.machine.version_of(distribution)
            if version is not None:
                return distribution, version
        return None

    @cached_property
    def tensorflow(self) -> FrameworkView | None:
        """What TensorFlow sees; ``None`` when it is not installed."""
        return self._framework("tensorflow", "its build and the GPUs it sees")

    @cached_property
    def torch(self) -> FrameworkView | None:
        return self._framework("torch", "the GPUs it sees")

    @cached_property
    def jax(self) -> FrameworkView | None:
        return self._framework("jax", "the GPUs it sees")

    def _framework(self, framework: str, what: str) -> FrameworkView | None:
        if self.installed(framework) is None:
            return None
        self.announce(
            f"Importing {_FRAMEWORK_NAMES[framework]} in a child process to read {what} "
            "(this takes a few seconds)…"
        )
        return self.machine.read_framework(framework)

    @cached_property
    def tensorflow_version(self) -> str | None:
        installed = self.installed("tensorflow")
        return None if installed is None else installed[1]

    @cached_property
    def tested(self) -> BuildConfiguration | None:
        """TensorFlow's tested build configuration for the installed release."""
        return None if self.tensorflow_version is None else tested_build(self.tensorflow_version)

    @cached_property
    def cuda_build(self) -> bool:
        """The installed TensorFlow is a CUDA build (read from the child)."""
        view = self.tensorflow
        return view is not None and view.usable and bool(view.build.get("is_cuda_build"))

    def build_version(self, key: str) -> tuple[int, ...] | None:
        """``cuda_version`` or ``cudnn_version`` of TensorFlow's build, as numbers."""
        view = self.tensorflow
        value = None if view is None else view.build.get(key)
        return None if value is None else version_tuple(str(value))

    @cached_property
    def cuda_runtime(self) -> LoadedLibrary:
        major = self.build_version("cuda_version")
        return load_cuda_runtime(*self._loader(), major[0] if major else None)

    @cached_property
    def cudnn(self) -> LoadedLibrary:
        major = self.build_version("cudnn_version")
        return load_cudnn(*self._loader(), major[0] if major else None)

    def _loader(self) -> tuple[Callable[[str], object], str, tuple[str, ...]]:
        machine = self.machine
        return machine.load_library, machine.platform, machine.library_directories

    @cached_property
    def settings(self) -> FrameworkSettings:
        """TensorFlow's memory settings in this process, read without importing anything."""
        return tensorflow_settings(self.machine.modules, self.machine.environ)

    @cached_property
    def gpu_timeouts(self) -> tuple[GpuTimeout, ...]:
        """The GPU watchdog of each visible GPU, by the hang watchdog's own probe."""
        machine = self.machine
        probe = SystemTimeoutProbe(
            platform=machine.platform,
            read_registry=machine.read_registry,
            nvml=machine.open_nvml(),
            load_library=machine.load_library,
        )
        devices = tuple(
            DeviceInfo(index=index, name=gpu.name, total_bytes=gpu.total_bytes, uuid=gpu.uuid)
            for index, gpu in enumerate(self.nvml.visible_gpus())
        )
        return probe.timeouts(devices)

    @cached_property
    def gpu_initialised(self) -> bool | None:
        """TensorFlow has set up the GPU in this process, so its memory settings are fixed."""
        if "tensorflow" not in self.machine.modules:
            return False
        return self.settings.gpu_initialised

    def remedies(self, *remedy_ids: str, **fields: FactValue) -> tuple[Remedy, ...]:
        """The catalog's remedies for TensorFlow, which most checks are about."""
        return self.remedies_for("tensorflow", remedy_ids, fields)

    def remedies_for(
        self, framework: str, remedy_ids: tuple[str, ...], fields: dict[str, FactValue]
    ) -> tuple[Remedy, ...]:
        """The catalog's remedies for ``framework`` (a module name) on this machine's GPUs,
        filled with this machine's facts and ``fields``; those with no spelling for that stack
        are left out."""
        filled = {**self.fields(), **fields}
        stack = self.stack(framework)
        spelled = (
            resolved(remedy_id, filled, self.gpu_initialised, stack) for remedy_id in remedy_ids
        )
        return tuple(_without_doctor_step(remedy) for remedy in spelled if remedy is not None)

    def stack(self, framework: str) -> Stack:
        """The stack a finding about ``framework`` speaks of, decided as a card's is: NVML's
        GPUs are NVIDIA's, and tensorflow-directml-plugin's are DirectML's."""
        vendor = None
        if self.machine.version_of("tensorflow-directml-plugin") is not None:
            vendor = Vendor.DIRECTML
        elif self.nvml.problem is None and self.nvml.visible_gpus():
            vendor = Vendor.NVIDIA
        return stack_of_modules((framework,), vendor)

    def fields(self) -> dict[str, FactValue]:
        """Values the catalog's remedy steps may name: versions, the driver they need."""
        cuda = self.build_version("cuda_version")
        cudnn = self.build_version("cudnn_version")
        fields: dict[str, FactValue] = {
            **build_fields(
                self.tensorflow_version,
                version_text(cuda[:2]) if cuda else None,
                version_text(cudnn) if cudnn else None,
            )
        }
        visible = self.machine.environ.get("CUDA_VISIBLE_DEVICES")
        if visible is not None:
            fields["cuda_visible_devices"] = repr(visible)
        plugin = self.machine.version_of("tensorflow-directml-plugin")
        if plugin is not None:  # its tensorflow-cpu must stay (remedies.for_this_stack)
            fields["directml_plugin"] = f"tensorflow-directml-plugin {plugin}"
        return fields


def _without_doctor_step(remedy: Remedy) -> Remedy:
    """The doctor does not tell the person to run the doctor."""
    return replace(remedy, steps=tuple(step for step in remedy.steps if step != SEE_DOCTOR))


def version_tuple(text: str) -> tuple[int, ...] | None:
    """``"12.5.1"`` as (12, 5, 1); ``None`` when it does not start with a number."""
    parts = []
    for part in text.strip().split("."):
        if not part.isdigit():
            break
        parts.append(int(part))
    return tuple(parts) or None


def version_text(version: tuple[int, ...]) -> str:
    return ".".join(str(part) for part in version)
