"""``diagnose`` on raised exceptions: the chain, type names, notes, the log, the context."""

from __future__ import annotations

import re
import textwrap
from dataclasses import replace

import pytest

from ipy_gpuguard import diagnose
from ipy_gpuguard.diagnosis import Context, DeviceMemory, Kind
from ipy_gpuguard.watchdog import GpuDuringStall, HangEvidence


@pytest.fixture(scope="module")
def tf():
    """Real TensorFlow errors, imported only by the tests that raise them."""
    import tensorflow

    return tensorflow


OOM = (
    "OOM when allocating tensor with shape[256,1024,1024] and type half on "
    "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc\n"
    "\t [[{{node model/dense_3/MatMul}}]]"
)
GIB = 1024**3


def raised(make):
    try:
        make()
    except BaseException as error:
        return error
    raise AssertionError("nothing raised")


@pytest.mark.tensorflow
def test_a_real_tensorflow_oom_error_gives_its_facts(tf):
    error = tf.errors.ResourceExhaustedError(None, None, OOM)
    diagnosis = diagnose(error, Context())
    assert diagnosis.rule_id == "oom.tf.tensor"
    assert diagnosis.error_type == "tensorflow.python.framework.errors_impl.ResourceExhaustedError"
    assert diagnosis.facts["shape"] == (256, 1024, 1024)
    assert diagnosis.facts["dtype"] == "half"
    assert diagnosis.facts["requested_bytes"] == 256 * 1024 * 1024 * 2  # from shape and dtype
    assert diagnosis.facts["device"] == "GPU:0"
    assert diagnosis.facts["allocator"] == "GPU_0_bfc"
    assert diagnosis.facts["layer"] == "dense_3"
    assert "512 MiB" in diagnosis.summary
    assert "[256, 1024, 1024]" in diagnosis.summary


@pytest.mark.tensorflow
def test_the_cause_of_a_wrapping_error_is_read(tf):
    def train():
        try:
            raise tf.errors.ResourceExhaustedError(None, None, OOM)
        except tf.errors.ResourceExhaustedError as oom:
            raise RuntimeError("training step 12 failed") from oom

    diagnosis = diagnose(raised(train), Context())
    assert diagnosis.rule_id == "oom.tf.tensor"
    assert diagnosis.error_type == "builtins.RuntimeError" or diagnosis.error_type == "RuntimeError"


def test_notes_are_read():
    def fail():
        error = RuntimeError("step failed")
        # What add_note (Python 3.11+) does; on 3.10 libraries set the attribute themselves.
        error.__notes__ = ["CUDA error: the launch timed out and was terminated"]
        raise error

    assert diagnose(raised(fail), Context()).rule_id == "hang.cuda.launch_timeout"


def test_a_framework_type_is_known_by_its_qualified_name_without_importing_it():
    out_of_memory = type("OutOfMemoryError", (RuntimeError,), {"__module__": "torch"})
    error = out_of_memory(
        "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 1; 7.79 GiB total capacity; "
        "5.12 GiB already allocated; 1.50 GiB free; 5.30 GiB reserved in total by PyTorch)"
    )
    diagnosis = diagnose(error, Context())
    assert diagnosis.rule_id == "oom.torch"
    assert diagnosis.facts["device"] == "GPU:1"
    assert diagnosis.facts["free_bytes"] == int(1.5 * GIB)
    assert "torch.OutOfMemoryError" in diagnosis.error_type


def test_a_name_error_is_never_a_gpu_failure_even_with_gpu_words_and_logs():
    error = raised(lambda: eval("CUDA_ERROR_OUT_OF_MEMORY"))
    context = Context(
        log_lines=(
            "W bfc_allocator.cc:479] Allocator (GPU_0_bfc) ran out of memory trying to allocate 2.00GiB",
        )
    )
    diagnosis = diagnose(error, context)
    assert diagnosis.kind is Kind.UNKNOWN
    assert diagnosis.rule_id == "unknown"


def test_keyboard_interrupt_is_not_diagnosed():
    assert diagnose(KeyboardInterrupt(), Context()).kind is Kind.UNKNOWN


@pytest.mark.tensorflow
def test_the_native_log_explains_a_generic_framework_error(tf):
    error = tf.errors.InternalError(None, None, "Failed to create session.")
    log = (
        "2019-03-02 16:11:14.118217: E tensorflow/stream_executor/cuda/cuda_driver.cc:806] "
        "failed to allocate 3.80G (4079353856 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory",
    )
    assert diagnose(error, Context()).kind is Kind.UNKNOWN
    diagnosis = diagnose(error, Context(log_lines=log))
    assert diagnosis.rule_id == "oom.cuda.driver"
    assert diagnosis.facts["requested_bytes"] == 4079353856
    assert diagnosis.matched.endswith("CUDA_ERROR_OUT_OF_MEMORY: out of memory")


@pytest.mark.tensorflow
def test_a_warning_at_import_does_not_outrank_the_error_itself(tf):
    error = tf.errors.InvalidArgumentError(None, None, "Incompatible shapes: [32,10] vs. [32,1]")
    log = (
        "I tensorflow/tsl/cuda/cudart_stub.cc:28] Could not find cuda drivers on your machine, GPU will not be used.",
    )
    assert diagnose(error, Context(log_lines=log)).rule_id == "data.incompatible_shapes"


def test_an_illegal_address_right_after_an_oom_is_its_consequence():
    error = RuntimeError("CUDA error: an illegal memory access was encountered")
    assert diagnose(error, Context()).rule_id == "fault.cuda.illegal_address"
    after = diagnose(error, Context(previous_kind=Kind.OUT_OF_MEMORY))
    assert after.rule_id == "oom.then_illegal_address"
    assert after.remedies[0].id == "restart_kernel"


@pytest.mark.tensorflow
def test_an_empty_gpu_list_is_recognised_from_the_failing_line(tf):
    def cell():
        gpus = []
        tf.config.experimental.set_memory_growth(gpus[0], True)

    assert diagnose(raised(cell), Context()).rule_id == "no_gpu.tf.empty_device_list"
    assert diagnose(raised(lambda: [][0]), Context()).kind is Kind.UNKNOWN


@pytest.mark.tensorflow
def test_memory_evidence_and_the_batch_estimate(tf):
    error = tf.errors.ResourceExhaustedError(None, None, OOM)
    device = DeviceMemory(
        0, "Tesla T4", 16 * GIB, peak_used_bytes=15 * GIB, peak_allocator_bytes=14 * GIB
    )
    diagnosis = diagnose(error, Context(devices=(device,)))
    # 16 GiB × 0.9 usable over 14 GiB in use + 0.5 GiB asked for
    assert diagnosis.facts["fit_fraction"] == pytest.approx(16 * 0.9 / 14.5, abs=1e-3)
    assert any("peak 15.0 GiB of 16.0 GiB (94%)" in line for line in diagnosis.evidence)
    assert any("allocator peaked at 14.0 GiB" in line for line in diagnosis.evidence)
    steps = next(remedy for remedy in diagnosis.remedies if remedy.id == "smaller_batch").steps
    assert "about 99% of the current batch" in steps[0]


@pytest.mark.tensorflow
def test_another_process_holding_the_gpu_comes_first(tf):
    error = tf.errors.ResourceExhaustedError(None, None, OOM)
    device = DeviceMemory(0, "Tesla T4", 16 * GIB, other_processes=((4242, 12 * GIB),))
    diagnosis = diagnose(error, Context(devices=(device,)))
    assert diagnosis.remedies[0].id == "stale_process"
    assert "pid 4242 holds 12.0 GiB on GPU 0" in diagnosis.remedies[0].steps[0]


@pytest.mark.tensorflow
def test_settings_that_need_a_fresh_kernel_say_so(tf):
    error = tf.errors.ResourceExhaustedError(None, None, OOM)
    growth = {r.id: r for r in diagnose(error, Context(gpu_initialised=True)).remedies}[
        "memory_growth"
    ]
    assert "kernel restart" in growth.note
    fresh = {r.id: r for r in diagnose(error, Context(gpu_initialised=False)).remedies}[
        "memory_growth"
    ]
    assert fresh.note == ""


@pytest.mark.tensorflow
def test_a_cpu_failure_offers_no_gpu_settings(tf):
    error = tf.errors.ResourceExhaustedError(None, None, OOM.replace("GPU:0", "CPU:0"))
    diagnosis = diagnose(error, Context())
    assert diagnosis.title == "Out of CPU memory"
    assert {"memory_growth", "cuda_malloc_async", "stale_process"}.isdisjoint(
        remedy.id for remedy in diagnosis.remedies
    )


def test_mismatch_remedies_name_the_versions_tensorflow_was_built_for():
    text = textwrap.dedent(
        """\
        E tensorflow/stream_executor/cuda/cuda_dnn.cc:362] Loaded runtime CuDNN library: 8.0.4 but source was compiled with: 8.1.0.  CuDNN library needs to have matching major version and equal or higher minor version.
        UnknownError: Failed to get convolution algorithm. This is probably because cuDNN failed to initialize
        """
    )
    diagnosis = diagnose(text, Context(tensorflow_version="2.10.1"))
    assert diagnosis.rule_id == "mismatch.cudnn.version"
    assert diagnosis.facts["found_version"] == "8.0.4"
    assert diagnosis.facts["expected_version"] == "8.1.0"
    install = diagnosis.remedies[0]
    # Issue 24: TensorFlow 2.10 has no tensorflow[and-cuda] extra to install them with.
    assert install.id == "install_matching_libraries_before_2_14"
    assert (
        "TensorFlow 2.10.1 was built with CUDA 11.2 and cuDNN 8.1: install those"
        in (install.steps[0])
    )
    assert "cudatoolkit=11.2 cudnn=8.1" in install.steps[0]
    assert "and-cuda" not in " ".join(install.steps)


def test_an_oom_on_a_simulated_gpu_says_what_the_simulation_stands_for():
    """Issue 14, 20: "Out of CPU memory" under a panel showing a simulated GPU, unexplained."""
    device = DeviceMemory(0, "Simulated GPU", 8 * 2**30, 2**30, None, simulated=True)
    text = "OOM when allocating tensor with shape[64,1024] and type float on /device:CPU:0"
    diagnosis = diagnose(text, Context(devices=(device,)))
    assert diagnosis.title == "Out of CPU memory"
    assert diagnosis.evidence[0].startswith("GPU 0 is simulated (GPUGUARD_SIMULATE)")
    assert "(Simulated GPU, simulated)" in diagnosis.evidence[1]


@pytest.mark.parametrize(
    ("state", "present", "absent"),
    [
        ("idle", "check_input_pipeline", "smaller_work"),
        ("busy", "smaller_work", "check_input_pipeline"),
    ],
)
def test_the_remedies_of_a_stall_follow_what_the_gpu_did(state, present, absent):
    """Issue 14, 23: an idle GPU (input pipeline stall) was offered the timeout advice."""
    percent = {"idle": 3.0, "busy": 99.0}[state]
    hang = HangEvidence((), gpus=(GpuDuringStall(0, percent, simulated=False),))
    context = Context(watchdog_interrupted=True, hang=hang)
    diagnosis = diagnose("KeyboardInterrupt", context)
    assert diagnosis.rule_id == "hang.watchdog.interrupted"
    ids = [remedy.id for remedy in diagnosis.remedies]
    assert present in ids
    assert absent not in ids


def test_an_allocation_many_times_the_device_is_said_in_whole_times():
    """Issue 21: "212992.0×" on a card."""
    oom = (
        "ResourceExhaustedError: OOM when allocating tensor with shape[416,1048576,1048576] and "
        "type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc"
    )
    devices = (DeviceMemory(0, "GPU 0", 8 * 2**30),)
    found = diagnose(oom, Context(devices=devices))
    (line,) = [line for line in found.evidence if line.startswith("The failed allocation alone")]
    assert "the device's 8.00 GiB" in line
    assert "212,992× the device's" in line


def test_every_watchdog_the_catalog_names_is_said_to_be_whose():
    """Issue 21: a stall's remedy said "the watchdog resets a GPU", the guard's watchdog and the
    driver's timeout (TDR) in one word."""
    from ipy_gpuguard.diagnosis.remedies import REMEDIES
    from ipy_gpuguard.diagnosis.rules import RULES

    texts = [remedy.why for remedy in REMEDIES.values()]
    texts += [step for remedy in REMEDIES.values() for step in remedy.steps]
    texts += [rule.summary for rule in RULES]
    whose = re.compile(r"(stall watchdog|\w+'s (own )?(timeout|watchdog)|TDR)")
    for text in texts:
        if re.search(r"(?i)watchdog", text):
            assert whose.search(text), text
    assert "not the guard's stall watchdog" in REMEDIES["smaller_work"].why


@pytest.mark.parametrize(
    ("text", "simulated", "title"),
    [
        (
            "JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory allocating 4398046511872 bytes.",
            True,
            "Out of CPU memory (XLA)",
        ),
        (
            "JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory allocating 4398046511872 bytes.",
            False,
            "Out of GPU memory (XLA)",
        ),
        (
            "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",
            True,
            "Out of GPU memory (PyTorch)",
        ),
    ],
)
def test_the_title_names_the_device_the_error_names_or_the_cpu_a_simulated_gpu_stands_for(
    text, simulated, title
):
    """Issue 24 item 5: JAX's out-of-memory on a simulated GPU was titled GPU where
    TensorFlow's said CPU."""
    device = DeviceMemory(0, "GPU", 8 * 2**30, 2**30, None, simulated=simulated)
    assert diagnose(text, Context(devices=(device,))).title == title


PIPELINE_OP = (
    "UnknownError: {{function_node __wrapped__IteratorGetNext_output_types_2_device_/job:localhost"
    "/replica:0/task:0/device:CPU:0}} "
)


@pytest.mark.parametrize(
    ("inside", "title"),
    [
        (  # the person's generator ran JAX on the GPU: JAX's error names no device
            "XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
            "17179869184 bytes.\n\t [[{{node PyFunc}}]] [Op:IteratorGetNext]",
            "Out of GPU memory (XLA)",
        ),
        (  # TensorFlow's own, in a map of the pipeline: on the CPU, and it says so
            "OOM when allocating tensor with shape[100000,100000] and type float on "
            "/job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu [Op:IteratorGetNext]",
            "Out of CPU memory",
        ),
    ],
)
def test_an_error_raised_in_a_tf_data_pipeline_is_not_placed_on_the_cpu_by_its_header(
    inside, title
):
    """TensorFlow heads an error of an iterator's op with the device it placed the op on,
    always the CPU: a JAX out-of-memory error raised in the person's generator was titled out of
    CPU memory."""
    device = DeviceMemory(0, "NVIDIA A100-SXM4-80GB", 80 * GIB, GIB, None)
    assert diagnose(PIPELINE_OP + inside, Context(devices=(device,))).title == title


LAUNCH_FAILURE = "RuntimeError: CUDA error: unspecified launch failure"


@pytest.mark.parametrize(
    ("evidence", "kind"),
    [
        ("", Kind.HANG),  # nothing tells: the display watchdog's kill is the likelier
        ("OS: Microsoft Windows 10 Pro", Kind.HANG),
        (
            "[rank1]: ProcessGroupNCCL.cpp:1895] Process group watchdog thread terminated",
            Kind.FAULT,
        ),
        ("name: NVIDIA A100-SXM4-80GB", Kind.FAULT),
        ("NVRM: Xid (PCI:0000:01:00): 31, pid=1, name=python, Ch 00000008", Kind.FAULT),
        ("NVRM: Xid (PCI:0000:01:00): 109, errorString CTX SWITCH TIMEOUT", Kind.HANG),
    ],
)
def test_an_unspecified_launch_failure_is_a_hang_or_a_fault_by_its_evidence(evidence, kind):
    """Issue 25: a launch failure is the display watchdog's kill on a GPU that drives a display,
    a fault on a compute GPU; the card says what tells them apart."""
    found = diagnose(f"{evidence}\n{LAUNCH_FAILURE}", Context())
    assert found.kind is kind
    if found.rule_id.endswith("launch_failure"):
        assert "What tells them apart" in found.summary


NO_ENGINE = "RuntimeError: GET was unable to find an engine to execute this computation"


def test_cudnn_without_an_engine_is_memory_only_when_memory_ran_out_beside_it():
    assert diagnose(NO_ENGINE, Context()).rule_id == "mismatch.cudnn.no_engine"
    with_memory = NO_ENGINE + "; cuDNN error: CUDNN_STATUS_ALLOC_FAILED"
    assert diagnose(with_memory, Context()).rule_id == "oom.cudnn.no_engine"
    warning = (
        "UserWarning: Plan failed with a cudnnException: CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: "
        "cudnnFinalize Descriptor Failed cudnn_status: CUDNN_STATUS_NOT_SUPPORTED"
    )
    assert diagnose(warning, Context()).kind is Kind.UNKNOWN


@pytest.mark.parametrize(
    ("text", "rule_id", "facts"),
    [
        (
            "RuntimeError: stack expects each tensor to be equal size, but got [3, 288, 224] "
            "at entry 0 and [3, 320, 256] at entry 1",
            "data.batch_shapes",
            {"first_shape": "[3, 288, 224]", "other_shape": "[3, 320, 256]"},
        ),
        (
            "RuntimeError: expected scalar type Long but found Float",
            "data.dtype_mismatch",
            {"expected_dtype": "Long", "found_dtype": "Float"},
        ),
        (
            "ValueError: Target size (torch.Size([128])) must be the same as input size "
            "(torch.Size([256]))",
            "data.logits_labels",
            {"labels_shape": "[128]", "output_shape": "[256]"},
        ),
        (
            "TypeError: dot_general requires contracting dimensions to have the same shape, "
            "got (1041,) and (1029,).",
            "data.incompatible_shapes",
            {"shapes": "(1041,) and (1029,)"},
        ),
        (
            "ValueError: Input 0 is incompatible with layer conv2d_1: expected ndim=4, found ndim=3",
            "data.keras_input",
            {"expected_ndim": 4, "found_ndim": 3},
        ),
        (
            "ValueError: Unrecognized data type: x=[10.0] (of type <class 'list'>)",
            "data.no_adapter",
            {"input_types": "<class 'list'>"},
        ),
        ("IndexError: index out of range in self", "data.index_out_of_range", {}),
        ("IndexError: Target 10 is out of bounds.", "data.index_out_of_range", {}),
        (
            "RuntimeError: The size of tensor a (32) must match the size of tensor b (64) at "
            "non-singleton dimension 0",
            "data.incompatible_shapes",
            {},
        ),
        (
            "RuntimeError: Given groups=1, weight of size [64, 3, 7, 7], expected input[1, 4, 224, "
            "224] to have 3 channels, but got 4 channels instead",
            "data.incompatible_shapes",
            {},
        ),
        ("RuntimeError: Found dtype Double but expected Float", "data.dtype_mismatch", {}),
        (
            "ValueError: Expected input batch_size (32) to match target batch_size (64).",
            "data.logits_labels",
            {},
        ),
        (
            "TypeError: Incompatible shapes for dot: got (3, 4) and (5, 6).",
            "data.incompatible_shapes",
            {},
        ),
    ],
)
def test_a_data_error_of_pytorch_jax_or_keras_3_is_a_data_card_with_what_it_names(
    text, rule_id, facts
):
    found = diagnose(text, Context())
    assert (found.rule_id, found.kind, found.is_gpu_failure) == (rule_id, Kind.DATA, False)
    assert {name: found.facts[name] for name in facts} == facts


def test_a_stall_in_the_persons_generator_is_not_advised_shorter_gpu_work():
    """Issue 35 item 16: a data-pipeline stall (the generator stuck on tf.data's thread) was
    advised to "give the GPU shorter pieces of work", on a GPU whose utilisation is unknown."""
    from ipy_gpuguard.watchdog.monitor import Stall
    from ipy_gpuguard.watchdog.stacks import StackReport, ThreadStack

    main = ThreadStack("MainThread", 1, True, ())
    generator = ThreadStack("tf_data_private_threadpool", 2, False, (), run_by_library=True)
    stall = Stall(0.0, 12.0, 10.0, 5, "fit", (0.1,), 0.1, StackReport((main, generator)))
    hang = HangEvidence((0.1,), stall, 12.0, gpus=(GpuDuringStall(0, 40.0, simulated=True),))
    diagnosis = diagnose("KeyboardInterrupt", Context(watchdog_interrupted=True, hang=hang))
    ids = [remedy.id for remedy in diagnosis.remedies]
    assert "check_input_pipeline" in ids
    assert "smaller_work" not in ids


def test_the_allocator_whose_peak_a_card_quotes_is_named():
    """Keras on JAX fed from tf.data on a simulated GPU: the only allocator the guard could
    read was TensorFlow's, and the card said "The framework's allocator peaked at 0 B"."""
    error = "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 8589934592 bytes."
    device = DeviceMemory(
        0,
        "Simulated GPU",
        16 * GIB,
        peak_used_bytes=15 * GIB,
        peak_allocator_bytes=0,
        simulated=True,
        allocator_framework="TensorFlow",
    )
    evidence = diagnose(error, Context(devices=(device,))).evidence
    assert "TensorFlow's allocator peaked at 0 B." in evidence
    unnamed = diagnose(error, Context(devices=(replace(device, allocator_framework=None),)))
    assert "The framework's allocator peaked at 0 B." in unnamed.evidence
