"""The stack of an error: its own words first, then what the guard saw of the cell."""

from __future__ import annotations

import pytest

from ipy_gpuguard.diagnosis import Context, DeviceMemory, diagnose
from ipy_gpuguard.diagnosis.remedies import remedy_for, resolved
from ipy_gpuguard.diagnosis.stack import (
    UNKNOWN,
    Framework,
    Stack,
    Vendor,
    stack_of_modules,
    stack_of_text,
)

TORCH_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 7.79 GiB of which 1.00 GiB is free."
)


def test_the_type_of_a_raised_error_names_the_framework_that_raised_it():
    stack = stack_of_text(["boom"], ["torch.OutOfMemoryError", "RuntimeError"])
    assert stack.raised_by is Framework.PYTORCH


def test_keras_3_on_pytorch_is_both_and_pytorch_raised():
    files = ["/env/keras/src/trainers/trainer.py", "/env/torch/nn/modules/module.py"]
    stack = stack_of_text([TORCH_OOM], files=files)
    assert stack.frameworks == {Framework.KERAS, Framework.PYTORCH}
    assert stack.raised_by is Framework.PYTORCH
    assert stack.in_order()[0] is Framework.KERAS  # the person writes Keras


def test_jaxlibs_copy_of_tensorflows_tree_is_not_tensorflow():
    line = (
        "E external/org_tensorflow/tensorflow/compiler/xla/python/local_client.cc:672] Execution "
        "of replica 0 failed: Resource exhausted: Out of memory while trying to allocate 5 bytes."
    )
    assert stack_of_text([line]).frameworks == {Framework.JAX}


#: XLA's allocator on a GPU, as JAX logs it (flatironinstitute/nemos#345): the same BFC
#: allocator, and the same name, as TensorFlow's.
XLA_BFC_LINE = (
    "2025-05-18 21:59:57.340116: W external/xla/xla/tsl/framework/bfc_allocator.cc:512] "
    "Allocator (GPU_0_bfc) ran out of memory trying to allocate 3.37GiB (rounded to "
    "3620864000)requested by op "
)


def test_the_gpu_allocators_name_is_not_tensorflows_alone():
    assert Framework.TENSORFLOW not in stack_of_text([XLA_BFC_LINE]).frameworks


def test_a_jax_out_of_memory_error_with_its_allocators_log_gets_no_tensorflow_advice():
    """The allocator's line named TensorFlow: a JAX card said to set ``TF_GPU_ALLOCATOR``."""
    raised = type("JaxRuntimeError", (RuntimeError,), {"__module__": "jax.errors"})
    error = raised(
        "RESOURCE_EXHAUSTED: Failed to load in-memory CUBIN (compiled for a different GPU?).: "
        "CUDA_ERROR_OUT_OF_MEMORY: out of memory"  # iit-DLSLab/mpx#11
    )
    devices = (DeviceMemory(0, "NVIDIA A100-SXM4-40GB", 40 << 30),)
    context = Context(log_lines=(XLA_BFC_LINE,), devices=devices, frameworks=frozenset())
    said = diagnose(error, context)
    steps = " ".join(step for remedy in said.remedies for step in remedy.steps)
    assert "XLA_PYTHON_CLIENT_PREALLOCATE" in steps
    assert "TF_" not in steps
    assert "TensorFlow" not in steps


@pytest.mark.parametrize(
    ("text", "vendor"),
    [
        (TORCH_OOM, Vendor.NVIDIA),
        ("HIP out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.98 GiB total)", Vendor.AMD),
        (TORCH_OOM + "\nAMD Radeon RX 6800 XT, gfx1030", Vendor.AMD),
        ("RuntimeError: MPS backend out of memory (MPS allocated: 17.00 GB)", Vendor.APPLE),
        (
            "OOM when allocating tensor ... on /job:localhost/replica:0/task:0/device:DML:0",
            Vendor.DIRECTML,
        ),
        (
            "Unable to initialize backend 'rocm': NOT_FOUND ... Available platform names are: CUDA",
            Vendor.NVIDIA,
        ),
        ("list index out of range", None),
    ],
)
def test_the_vendor_is_the_strongest_that_the_words_name(text, vendor):
    assert stack_of_text([text]).vendor is vendor


def test_what_the_cell_imported_fills_in_only_what_the_words_leave_open():
    stack = stack_of_text(["Out of memory"]).filled_in({Framework.JAX}, Vendor.NVIDIA)
    assert stack == Stack(frozenset({Framework.JAX}), Framework.JAX, Vendor.NVIDIA)
    torch = stack_of_text([TORCH_OOM]).filled_in({Framework.JAX}, None)
    assert torch.frameworks == {Framework.PYTORCH}


def test_the_doctor_decides_a_process_stack_with_the_same_rules():
    stack = stack_of_modules(["sys", "tensorflow", "numpy"], Vendor.NVIDIA)
    assert stack == Stack(frozenset({Framework.TENSORFLOW}), Framework.TENSORFLOW, Vendor.NVIDIA)


def test_an_unknown_stack_gets_remedies_that_name_no_framework():
    mixed = remedy_for("mixed_precision", UNKNOWN)
    assert mixed is not None
    assert not mixed.frameworks
    assert remedy_for("memory_growth", UNKNOWN) is None  # TensorFlow's and JAX's only


def test_a_guarded_cell_gives_an_unnamed_error_the_stack_it_imported():
    """``Out of memory`` alone names no framework: the cell's imports and NVML's GPU do."""
    devices = (DeviceMemory(0, "NVIDIA H100", 80 << 30),)
    in_jax = diagnose(
        "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 8589934592 bytes.",
        Context(devices=devices, frameworks=frozenset({Framework.JAX})),
    )
    steps = " ".join(step for remedy in in_jax.remedies for step in remedy.steps)
    assert "XLA_PYTHON_CLIENT_PREALLOCATE" in steps
    assert "keras" not in steps.lower()
    assert "torch" not in steps


def test_a_directml_error_never_gets_advice_that_removes_its_tensorflow_cpu():
    directml = Stack(frozenset({Framework.TENSORFLOW}), Framework.TENSORFLOW, Vendor.DIRECTML)
    remedy = resolved("install_gpu_tensorflow", {}, None, directml)
    assert remedy is not None
    assert remedy.id == "keep_directml_tensorflow"


#: Keras 3 on PyTorch, fed by a ``DataLoader`` whose items differ in shape.
KERAS_ON_TORCH_DATA = """Traceback (most recent call last):
  File "/tmp/ipykernel_42/1.py", line 1, in <module>
    model.fit(loader, epochs=3)
  File "/usr/lib/python3.11/site-packages/keras/src/utils/traceback_utils.py", line 122, in error_handler
    raise e.with_traceback(filtered_tb) from None
  File "/usr/lib/python3.11/site-packages/torch/utils/data/_utils/collate.py", line 271, in collate_tensor_fn
    return torch.stack(batch, 0, out=out)
RuntimeError: stack expects each tensor to be equal size, but got [3, 224, 224] at entry 0 and [3, 256, 256] at entry 1
"""


def test_keras_on_pytorch_gets_its_data_pipelines_advice_not_tf_datas():
    """The person writes Keras, but their data is PyTorch's: Keras' spelling of a data remedy
    was TensorFlow's (``ds.map(tf.image.resize)``, ``tf.cast``)."""
    steps = " ".join(
        step for remedy in diagnose(KERAS_ON_TORCH_DATA).remedies for step in remedy.steps
    )
    assert "collate_fn" in steps
    assert "tf." not in steps
    cast = diagnose(
        KERAS_ON_TORCH_DATA.rsplit("RuntimeError", 1)[0]
        + "RuntimeError: expected scalar type Float but found Double\n"
    )
    cast_steps = " ".join(step for remedy in cast.remedies for step in remedy.steps)
    assert "x.float()" in cast_steps
    assert "tf.cast" not in cast_steps
