from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import types

import pytest

from ipy_gpuguard.telemetry import AllocatorReading, FrameworkAllocators


def run_tensorflow(script, **env):
    """TensorFlow's runtime is set up once per process: each case gets a fresh one."""
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, **env},
    )
    assert result.stdout.strip().endswith("ok"), result.stderr[-3000:]


@pytest.mark.tensorflow
def test_tensorflow_is_not_read_before_its_runtime_is_initialised():
    """Reading memory would initialise the GPUs and break the person's set_memory_growth."""
    run_tensorflow(
        """
        import tensorflow as tf
        from tensorflow.python.eager import context
        from ipy_gpuguard.telemetry import FrameworkAllocators
        allocators = FrameworkAllocators("CPU")
        assert allocators.read(0) is None
        allocators.reset_peaks([0])
        assert not context.context()._initialized, "the guard initialised TensorFlow"
        tf.config.set_visible_devices([], "GPU")  # raises once devices are initialised
        print("ok")
        """
    )


@pytest.mark.tensorflow
def test_tensorflow_allocator_current_and_peak_after_reset():
    # TensorFlow keeps allocator statistics on the CPU only with its BFC allocator there.
    run_tensorflow(
        """
        import tensorflow as tf
        from ipy_gpuguard.telemetry import FrameworkAllocators
        allocators = FrameworkAllocators("CPU")
        held = tf.ones((1024, 1024))  # 4 MiB
        before = allocators.read(0)
        assert before.framework == "TensorFlow", before
        assert before.current_bytes >= 4 * 1024**2, before
        allocators.reset_peaks([0])
        spike = tf.ones((2048, 2048))  # 16 MiB, then freed
        del spike
        after = allocators.read(0)
        assert after.peak_bytes >= before.current_bytes + 16 * 1024**2, after
        assert after.current_bytes < after.peak_bytes, after
        assert FrameworkAllocators("GPU").read(0) is None  # no such device here
        print("ok")
        """,
        TF_CPU_ALLOCATOR_USE_BFC="true",
    )


def fake_torch(initialised):
    cuda = types.SimpleNamespace(
        is_initialized=lambda: initialised,
        memory_allocated=lambda index: 100 + index,
        max_memory_allocated=lambda index: 500 + index,
        reset_peak_memory_stats=lambda index: None,
    )
    return types.SimpleNamespace(cuda=cuda)


def test_torch_is_read_only_once_it_has_created_a_cuda_context():
    assert FrameworkAllocators(modules={"torch": fake_torch(False)}).read(0) is None
    reading = FrameworkAllocators(modules={"torch": fake_torch(True)}).read(1)
    assert (reading.framework, reading.current_bytes, reading.peak_bytes) == ("PyTorch", 101, 501)


def test_torchs_limit_is_its_per_process_fraction_of_the_device():
    torch = fake_torch(True)
    torch.cuda.get_device_properties = lambda index: types.SimpleNamespace(total_memory=80 << 30)
    allocators = FrameworkAllocators(modules={"torch": torch})
    assert allocators.limit_bytes(0) is None  # a PyTorch that cannot say
    torch.cuda.get_per_process_memory_fraction = lambda index: 1.0
    assert allocators.limit_bytes(0) is None  # the whole device
    torch.cuda.get_per_process_memory_fraction = lambda index: 0.25
    assert allocators.limit_bytes(0) == 20 << 30


def test_frameworks_not_imported_are_not_read():
    assert FrameworkAllocators(modules={}).read(0) is None


class FakeJaxDevice:
    """A JAX GPU device as ``jax.Device`` answers ``memory_stats()`` on a real GPU (the keys an
    H200 gave with ``XLA_PYTHON_CLIENT_MEM_FRACTION`` at 2 GiB: ``bytes_limit`` is the pool)."""

    def __init__(self, in_use, peak=70 * 2**30, limit=2**36):
        self.in_use = in_use
        self.peak = peak
        self.limit = limit

    def memory_stats(self):
        return {
            "bytes_in_use": self.in_use,
            "peak_bytes_in_use": self.peak,
            "bytes_limit": self.limit,
            "largest_alloc_size": 0,
            "num_allocs": 0,
        }


def fake_jax(devices, initialised=True):
    jax = types.ModuleType("jax")
    jax.devices = lambda kind=None: devices
    bridge = types.ModuleType("jax._src.xla_bridge")
    bridge._backends = {"cuda": object()} if initialised else {}
    return {"jax": jax, "jax._src.xla_bridge": bridge}


def test_jax_is_read_from_its_allocator_not_its_preallocated_device():
    """Issue 14, 9: NVML's "used" is flat under JAX's 75% preallocation."""
    allocators = FrameworkAllocators("GPU", fake_jax([FakeJaxDevice(3 * 2**30)]))
    reading = allocators.read(0)
    # not the lifetime peak: never reset, it is not the cell's
    assert reading == AllocatorReading("JAX", 3 * 2**30, 3 * 2**30, peak_known=False)
    assert allocators.read(1) is None


def test_jax_peak_is_the_cells_once_it_passes_the_mark_found_at_the_reset():
    """JAX's high-water mark cannot be reset. A step's temporaries live for milliseconds, so
    the bytes in use between steps never show them (on an H200, 17 MB in use after each step of
    a fit whose peak was 203 MB): a peak is the cell's only once the mark rises."""
    device = FakeJaxDevice(2**30, peak=5 * 2**30)
    allocators = FrameworkAllocators("GPU", fake_jax([device]))
    allocators.reset_peaks([0])
    device.peak = 5 * 2**30  # the cell has not passed the mark of an earlier cell
    assert allocators.read(0) == AllocatorReading("JAX", 2**30, 2**30, peak_known=False)
    device.peak = 6 * 2**30
    assert allocators.read(0) == AllocatorReading("JAX", 2**30, 6 * 2**30)


def test_a_jax_backend_set_up_during_the_cell_has_only_the_cells_peak():
    device = FakeJaxDevice(2**30, peak=3 * 2**30)
    modules = fake_jax([device], initialised=False)
    allocators = FrameworkAllocators("GPU", modules)
    allocators.reset_peaks([0])  # JAX not set up yet: no mark, nothing asked of it
    modules["jax._src.xla_bridge"]._backends = {"cuda": object()}
    assert allocators.read(0) == AllocatorReading("JAX", 2**30, 3 * 2**30)


def test_the_allocators_limit_is_jaxs_pool_not_the_device():
    """JAX takes 75% of the GPU by default: a forecast against the device's whole memory told
    an H200's 2 GiB pool that batches 20 to 110 times too large would fit."""
    allocators = FrameworkAllocators("GPU", fake_jax([FakeJaxDevice(0, limit=2_139_095_040)]))
    assert allocators.limit_bytes(0) == 2_139_095_040
    assert allocators.limit_bytes(1) is None
    assert FrameworkAllocators("GPU", {}).limit_bytes(0) is None


def fake_tensorflow(logical_limits_mb):
    tensorflow = types.ModuleType("tensorflow")
    gpu = object()
    configs = (
        None
        if logical_limits_mb is None
        else [types.SimpleNamespace(memory_limit=limit) for limit in logical_limits_mb]
    )
    tensorflow.config = types.SimpleNamespace(
        list_physical_devices=lambda kind: [gpu] if kind == "GPU" else [],
        get_logical_device_configuration=lambda device: configs if device is gpu else None,
    )
    context = types.ModuleType("tensorflow.python.eager.context")
    context.context_safe = lambda: types.SimpleNamespace(_initialized=True)
    return {"tensorflow": tensorflow, "tensorflow.python.eager.context": context}


@pytest.mark.parametrize(
    ("logical_limits_mb", "limit"),
    [(None, None), ([1024], 2**30), ([1024, 512], 1536 * 2**20), ([None], None)],
)
def test_tensorflows_limit_is_the_memory_set_on_its_logical_devices(logical_limits_mb, limit):
    allocators = FrameworkAllocators("GPU", fake_tensorflow(logical_limits_mb))
    assert allocators.limit_bytes(0) == limit
    assert allocators.limit_bytes(1) is None


def test_jax_is_not_asked_before_it_set_up_its_backends():
    modules = fake_jax([FakeJaxDevice(2**30)], initialised=False)
    modules["jax"].devices = lambda kind=None: pytest.fail("would set up JAX's backends")
    assert FrameworkAllocators("GPU", modules).read(0) is None


def fake_tensorflow_holding(current, peak):
    """A TensorFlow whose runtime is set up and whose allocator answers on every device."""
    modules = fake_tensorflow(None)
    modules["tensorflow"].config.experimental = types.SimpleNamespace(
        get_memory_info=lambda device: {"current": current, "peak": peak}
    )
    return modules


def fake_keras_on(backend):
    config = types.ModuleType("keras.src.backend.config")
    config.backend = lambda: backend
    return {"keras.src.backend.config": config}


def test_the_framework_keras_trains_in_is_read_before_tensorflow_imported_for_its_data():
    """Keras on JAX fed from ``tf.data`` imports TensorFlow, whose allocator holds none of the
    model: the panel said "TensorFlow allocator" of a JAX model's run."""
    jax_device = FakeJaxDevice(3 * 2**30)
    both = {**fake_tensorflow_holding(4096, 8192), **fake_jax([jax_device])}
    # no Keras: the framework that holds the most, JAX's model beside tf.data's TensorFlow
    assert FrameworkAllocators("GPU", both).read(0).framework == "JAX"
    empty = {**fake_tensorflow_holding(0, 0), **fake_jax([FakeJaxDevice(0)])}
    assert FrameworkAllocators("GPU", empty).read(0).framework == "TensorFlow"  # a tie
    keras_2 = {**both, "tf_keras": types.ModuleType("tf_keras")}  # trains in TensorFlow
    assert FrameworkAllocators("GPU", keras_2).read(0).framework == "TensorFlow"
    on_jax = FrameworkAllocators("GPU", {**both, **fake_keras_on("jax")})
    assert on_jax.read(0) == AllocatorReading("JAX", 3 * 2**30, 3 * 2**30, peak_known=False)
    on_tensorflow = FrameworkAllocators("GPU", {**both, **fake_keras_on("tensorflow")})
    assert on_tensorflow.read(0) == AllocatorReading("TensorFlow", 4096, 8192)
    # where Keras' framework cannot be read, the others still are
    alone = {**fake_tensorflow_holding(4096, 8192), **fake_keras_on("jax")}
    assert FrameworkAllocators("GPU", alone).read(0).framework == "TensorFlow"


def test_a_keras_backend_that_cannot_say_is_as_no_keras():
    broken = types.ModuleType("keras.src.backend.config")
    broken.backend = lambda: 1 / 0
    both = {**fake_tensorflow_holding(4096, 8192), **fake_jax([FakeJaxDevice(2**30)])}
    for keras_config in (broken, types.ModuleType("keras.src.backend.config")):
        modules = {**both, "keras.src.backend.config": keras_config}
        assert FrameworkAllocators("GPU", modules).read(0).framework == "JAX"  # holds the most


@pytest.mark.tensorflow
def test_the_real_keras_says_its_backend_where_the_allocators_look():
    run_tensorflow(
        """
        import sys, types
        import keras
        from ipy_gpuguard.telemetry import FrameworkAllocators

        reading = {"current": 4096, "peak": 8192}
        tensorflow = types.SimpleNamespace(config=types.SimpleNamespace(
            experimental=types.SimpleNamespace(get_memory_info=lambda device: reading)))
        context = types.SimpleNamespace(
            context_safe=lambda: types.SimpleNamespace(_initialized=True))
        device = types.SimpleNamespace(memory_stats=lambda: {"bytes_in_use": 5})
        modules = {
            "keras.src.backend.config": sys.modules["keras.src.backend.config"],
            "tensorflow": tensorflow,
            "tensorflow.python.eager.context": context,
            "jax": types.SimpleNamespace(devices=lambda kind=None: [device]),
            "jax._src.xla_bridge": types.SimpleNamespace(_backends={"cuda": object()}),
        }
        assert FrameworkAllocators("GPU", modules).read(0).framework == "JAX"
        print("ok")
        """,
        KERAS_BACKEND="jax",
    )
