"""The framework allocator's view of device memory: what TensorFlow or PyTorch hold.

TensorFlow reserves most of a GPU at start-up and its BFC allocator never gives memory back, so
NVML's "used" says little about a TensorFlow process; the allocator's current and peak bytes say
what the model really needs. Where Keras is imported, the framework it trains in is read first:
Keras on JAX commonly feeds ``fit`` from ``tf.data``, which imports TensorFlow, whose allocator
then holds none of the model; without Keras, the framework that holds the most. Only frameworks the person has already imported are read, looked up
in ``sys.modules``: importing one here would cost seconds. TensorFlow is read only once its
runtime is initialised, because asking it about memory would initialise the GPUs, and after that
``set_memory_growth`` fails with "Physical devices cannot be modified after being initialized".
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .model import AllocatorReading

log = logging.getLogger(__name__)


#: The name each of Keras 3's backends has here, as :class:`AllocatorReading` gives it.
_KERAS_BACKENDS = {"tensorflow": "TensorFlow", "torch": "PyTorch", "jax": "JAX"}


class FrameworkAllocators:
    """Reads the allocator of the framework in use: the one Keras trains in, else the one of
    TensorFlow, PyTorch and JAX that holds the most.

    The allocator, not the device, measures a run: TensorFlow and JAX reserve most of a GPU at
    once, so NVML's "used" stays flat whatever the batch.

    Parameters
    ----------
    device_type
        ``"GPU"`` for real devices. Simulated devices read TensorFlow's ``CPU`` allocator, so that
        a demo without a GPU shows a real allocator at work.
    modules
        Where to look for imported frameworks; ``sys.modules`` unless a test says otherwise.
    """

    def __init__(
        self, device_type: str = "GPU", modules: Mapping[str, ModuleType] | None = None
    ) -> None:
        self._device_type = device_type
        self._modules = sys.modules if modules is None else modules
        self._reported: set[str] = set()
        #: JAX's high-water mark on each device at the last reset, which it cannot make itself.
        self._jax_marks: dict[int, int] = {}

    def read(self, index: int) -> AllocatorReading | None:
        """The allocator's current and peak bytes on device ``index``, or ``None``."""
        readers = {
            "TensorFlow": self._read_tensorflow,
            "PyTorch": self._read_torch,
            "JAX": self._read_jax,
        }
        trains_in = self._keras_backend()
        if trains_in is not None:
            for name in sorted(readers, key=lambda name: name != trains_in):  # a stable sort
                reading = readers[name](index)
                if reading is not None:
                    return reading
            return None
        readings = [reading for read in readers.values() if (reading := read(index)) is not None]
        # Without Keras to say, the framework that holds the most (JAX's model, beside the
        # TensorFlow imported for tf.data); TensorFlow's where none holds more.
        return max(readings, key=lambda reading: reading.current_bytes, default=None)

    def _read_tensorflow(self, index: int) -> AllocatorReading | None:
        tensorflow = self._tensorflow()
        if tensorflow is None:
            return None
        info = self._quiet(
            "TensorFlow get_memory_info",
            tensorflow.config.experimental.get_memory_info,
            f"{self._device_type}:{index}",
        )
        if info is None:
            return None
        return AllocatorReading("TensorFlow", int(info["current"]), int(info["peak"]))

    def _read_torch(self, index: int) -> AllocatorReading | None:
        torch_cuda = self._torch_cuda()
        if torch_cuda is None:
            return None
        current = self._quiet("torch memory_allocated", torch_cuda.memory_allocated, index)
        peak = self._quiet("torch max_memory_allocated", torch_cuda.max_memory_allocated, index)
        if current is None or peak is None:
            return None
        return AllocatorReading("PyTorch", int(current), int(peak))

    def _read_jax(self, index: int) -> AllocatorReading | None:
        stats = self._jax_stats(index)
        if "bytes_in_use" not in stats:
            return None
        # JAX's own peak counts from the start of the process and cannot be reset: it is the
        # cell's once it passes the mark found at the reset; before that, only the bytes in
        # use are known.
        in_use = int(stats["bytes_in_use"])
        mark = int(stats.get("peak_bytes_in_use", 0))
        if index in self._jax_marks and mark > self._jax_marks[index]:
            return AllocatorReading("JAX", in_use, mark)
        return AllocatorReading("JAX", in_use, in_use, peak_known=False)

    def _keras_backend(self) -> str | None:
        """The framework Keras trains in, where it is imported: Keras 3's backend, or
        TensorFlow for Keras 2 (``tf_keras``, or a ``keras`` without Keras 3's backends);
        ``None`` without Keras, or where Keras cannot say."""
        if "keras.src.backend.config" not in self._modules:
            keras_2 = "tf_keras" in self._modules or "keras" in self._modules
            return "TensorFlow" if keras_2 else None
        return _KERAS_BACKENDS.get(imported_keras_backend(self._modules) or "")

    def limit_bytes(self, index: int) -> int | None:
        """The most the framework's allocator may take of device ``index``, where it says so:
        JAX's pool (75% of the GPU unless ``XLA_PYTHON_CLIENT_MEM_FRACTION`` says otherwise),
        PyTorch's per-process fraction, or a memory limit set on TensorFlow's logical device;
        the smallest, where several frameworks share the process. ``None`` where none says:
        the device's own memory is the limit."""
        stats = self._jax_stats(index)
        torch_cuda = self._torch_cuda()
        limits = [
            int(stats["bytes_limit"]) if "bytes_limit" in stats else None,
            self._torch_limit(torch_cuda, index) if torch_cuda is not None else None,
            self._tensorflow_limit(index),
        ]
        stated = [limit for limit in limits if limit is not None]
        return min(stated) if stated else None

    def _tensorflow_limit(self, index: int) -> int | None:
        """The memory limits set on the logical devices of TensorFlow's GPU ``index``."""
        tensorflow = self._tensorflow() if self._device_type == "GPU" else None
        if tensorflow is None:
            return None
        gpus = self._quiet("TensorFlow GPUs", tensorflow.config.list_physical_devices, "GPU") or ()
        if index >= len(gpus):
            return None
        configured = self._quiet(
            "TensorFlow logical devices",
            tensorflow.config.get_logical_device_configuration,
            gpus[index],
        )
        limits = [getattr(config, "memory_limit", None) for config in configured or ()]
        megabytes = [limit for limit in limits if isinstance(limit, int | float)]
        if not megabytes or len(megabytes) < len(limits):
            return None  # a logical device without a limit may take the whole GPU
        return int(sum(megabytes)) * 2**20  # megabytes, as TensorFlow takes them

    def _torch_limit(self, torch_cuda: Any, index: int) -> int | None:
        """``set_per_process_memory_fraction``'s share of the device (PyTorch 2.6 and later
        can say it), where it is less than all of it."""
        getter = getattr(torch_cuda, "get_per_process_memory_fraction", None)
        fraction = self._quiet("torch memory fraction", getter, index) if getter else None
        if not isinstance(fraction, float) or not 0 < fraction < 1:
            return None
        properties = self._quiet("torch device properties", torch_cuda.get_device_properties, index)
        total = getattr(properties, "total_memory", None)
        return int(total * fraction) if isinstance(total, int) else None

    def reset_peaks(self, indices: Iterable[int]) -> None:
        """Start the allocators' peak counters afresh, so that a cell's peak is its own; for
        JAX, note the mark to pass (none yet, before JAX has set up its backends)."""
        tensorflow = self._tensorflow()
        torch_cuda = self._torch_cuda()
        for index in indices:
            self._jax_marks[index] = int(self._jax_stats(index).get("peak_bytes_in_use", 0))
            if tensorflow is not None:
                self._quiet(
                    "TensorFlow reset_memory_stats",
                    tensorflow.config.experimental.reset_memory_stats,
                    f"{self._device_type}:{index}",
                )
            if torch_cuda is not None:
                self._quiet(
                    "torch reset_peak_memory_stats", torch_cuda.reset_peak_memory_stats, index
                )

    def _tensorflow(self) -> Any:
        tensorflow = self._modules.get("tensorflow")
        context = self._modules.get("tensorflow.python.eager.context")
        if tensorflow is None or context is None or not hasattr(tensorflow, "config"):
            return None  # not imported, or still importing
        current = context.context_safe()
        return tensorflow if getattr(current, "_initialized", False) else None

    def _torch_cuda(self) -> Any:
        if self._device_type != "GPU":
            return None
        torch = self._modules.get("torch")
        cuda = getattr(torch, "cuda", None)
        # is_initialized() is false until torch itself has created a CUDA context
        return cuda if cuda is not None and self._quiet("torch", cuda.is_initialized) else None

    def _jax_stats(self, index: int) -> dict[str, Any]:
        device = self._jax_device(index)
        if device is None:
            return {}
        return self._quiet("JAX memory_stats", device.memory_stats) or {}

    def _jax_device(self, index: int) -> Any:
        """JAX's GPU ``index``, once JAX has set up its backends (asking earlier would set them
        up, and take 75% of the GPU)."""
        if self._device_type != "GPU":
            return None
        jax = self._modules.get("jax")
        bridge = self._modules.get("jax._src.xla_bridge")
        if jax is None or not getattr(bridge, "_backends", None):
            return None
        devices = self._quiet("JAX devices", jax.devices, "gpu") or ()
        return devices[index] if index < len(devices) else None

    def _quiet(self, what: str, function: Any, *args: Any) -> Any:
        """Telemetry never raises: a failure is ``None``, logged the first time it happens."""
        try:
            return function(*args)
        except Exception as error:  # any framework error means "not known"
            if what not in self._reported:
                self._reported.add(what)
                log.info("%s failed: %s", what, error)
            return None


def imported_keras_backend(modules: Mapping[str, ModuleType]) -> str | None:
    """The backend a Keras 3 among ``modules`` (the imported ones) trains on (``"jax"``,
    ``"tensorflow"``, ``"torch"``), as it says itself; ``None`` where there is none, or it
    cannot say."""
    config = modules.get("keras.src.backend.config")
    backend = getattr(config, "backend", None)
    try:
        name = backend() if callable(backend) else None
    except Exception as error:  # a broken Keras says nothing of its backend
        log.info("Keras backend failed: %s", error)
        return None
    return name if isinstance(name, str) else None


@dataclass(frozen=True)
class FrameworkSettings:
    """TensorFlow's memory settings as they stand; ``None`` where they cannot be told.

    ``gpu_initialised``: TensorFlow has set up its devices, so memory growth and the allocator
    can no longer change in this process.
    """

    gpu_initialised: bool | None = None
    memory_growth: bool | None = None
    xla_auto_jit: bool | None = None


def tensorflow_settings(
    modules: Mapping[str, ModuleType] | None = None, environ: Mapping[str, str] | None = None
) -> FrameworkSettings:
    """Read the settings of an already imported TensorFlow, without initialising anything."""
    modules = sys.modules if modules is None else modules
    environ = os.environ if environ is None else environ
    flags = environ.get("TF_XLA_FLAGS", "")
    xla = "--tf_xla_auto_jit=1" in flags or "--tf_xla_auto_jit=2" in flags
    tensorflow = modules.get("tensorflow")
    context = modules.get("tensorflow.python.eager.context")
    if tensorflow is None or context is None or not hasattr(tensorflow, "config"):
        return FrameworkSettings(xla_auto_jit=xla or None)
    try:
        initialised = bool(getattr(context.context_safe(), "_initialized", False))
        gpus = tensorflow.config.list_physical_devices("GPU") if initialised else []
        growth = [tensorflow.config.experimental.get_memory_growth(gpu) for gpu in gpus]
    except Exception as error:  # a broken runtime is for the diagnosis, not for this reader
        log.info("reading TensorFlow's settings failed: %s", error)
        return FrameworkSettings(xla_auto_jit=xla or None)
    forced = environ.get("TF_FORCE_GPU_ALLOW_GROWTH") == "true"  # TensorFlow reads it exactly
    memory_growth = (forced or all(growth)) if growth else None
    return FrameworkSettings(initialised and bool(gpus), memory_growth, xla)
