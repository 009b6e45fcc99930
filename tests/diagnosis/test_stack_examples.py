"""The wrong-stack examples of issue 36, each as the card now reads it.

Corpus cases of the development split, by name, and PyTorch's own MPS message (from its
``MPSAllocator.mm``); ``test_stack_advice`` holds the same for every case of the corpus.
"""

from __future__ import annotations

from ipy_gpuguard.diagnosis import Context, Diagnosis, diagnose

from .corpus import CASES

BY_NAME = {case.name: case for case in CASES}

MPS_OOM = (
    "RuntimeError: MPS backend out of memory (MPS allocated: 17.90 GB, other allocations: "
    "1.28 GB, max allowed: 18.13 GB). Tried to allocate 1.00 GB on private pool. Use "
    "PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit for memory allocations (may "
    "cause system failure)."
)


def card_of(name: str) -> Diagnosis:
    return BY_NAME[name].diagnose()


def words(diagnosis: Diagnosis) -> str:
    parts = [diagnosis.title, diagnosis.summary]
    for remedy in diagnosis.remedies:
        parts += [remedy.title, remedy.why, *remedy.steps, remedy.note]
    return "\n".join(parts)


def test_a_pytorch_oom_gets_pytorchs_mixed_precision_and_fragmentation_remedy():
    text = words(card_of("oom.torch/expandable_segments_2025"))
    assert "torch.autocast" in text
    assert "keras" not in text
    assert "gradient_accumulation_steps" not in text
    assert "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in text
    assert "before PyTorch starts using the GPU" in text
    assert "TensorFlow" not in text


def test_an_mps_oom_gets_the_macs_setting_with_its_risk_and_no_nvidia_tools():
    text = words(diagnose(MPS_OOM, Context()))
    assert "PYTORCH_MPS_HIGH_WATERMARK_RATIO" in text
    assert "may swap or freeze" in text
    assert "nvidia-smi" not in text
    assert "PYTORCH_CUDA_ALLOC_CONF" not in text
    assert 'device_type="mps"' in text


def test_a_rocm_oom_names_rocm_smi_and_not_nvidia_smi():
    text = words(card_of("oom.hip/torch_rocm"))
    assert "rocm-smi" in text
    assert "nvidia-smi" not in text
    assert "PYTORCH_HIP_ALLOC_CONF" in text


def test_a_directml_oom_gets_no_cuda_allocator():
    text = words(card_of("oom.tf.tensor/directml_allocator"))
    assert "TF_GPU_ALLOCATOR" not in text
    assert "nvidia-smi" not in text


def test_a_jax_cudnn_mismatch_is_jaxs_and_gets_jaxs_install():
    diagnosis = card_of("mismatch.cudnn.version/jax_cusolver_older_than_built")
    assert diagnosis.summary.startswith("JAX was built with cuDNN")
    text = words(diagnosis)
    assert 'jax[cuda12]"' in text
    assert "tensorflow[and-cuda]" not in text


def test_a_pytorch_driver_too_old_gets_no_tensorflow_figures():
    text = words(card_of("mismatch.cuda.driver_too_old/torch_driver_too_old"))
    assert "PyTorch" in text
    assert "TensorFlow" not in text


def test_jaxs_cpu_fallback_says_to_install_a_cuda_jaxlib():
    text = words(card_of("no_gpu.cuda.no_device/neg_jax_fallback_warning_in_torch_trainer"))
    assert 'pip install -U "jax[cuda12]"' in text
    assert "tf.config" not in text


def test_an_nccl_heartbeat_timeout_gets_no_display_timeout_advice():
    diagnosis = card_of("hang.nccl.timeout/nccl_heartbeat_monitor_multinode_start_skew")
    text = words(diagnosis)
    assert "shorter pieces of work" not in text
    assert "init_process_group(timeout=" in text


#: Blaizzy/mlx-vlm#697 (2026): an MLX Metal page fault after a model's download progress bars;
#: gathered after the fourth round's split was drawn, so a test rather than a corpus case.
MLX_PAGE_FAULT = """\
2026-01-30 22:05:59,654 - DEBUG - System: arm64, GPU: Apple M4 Max
Fetching 10 files: 100%|████████████████████████████████| 10/10 [00:00<00:00, 208671.84it/s]
std::runtime_error: [METAL] Command buffer execution failed: Caused GPU Address Fault Error \
(0000000b:kIOGPUCommandBufferCallbackErrorPag
"""


def test_an_mlx_page_fault_after_a_progress_bar_is_a_metal_fault_with_mlxs_words():
    diagnosis = diagnose(MLX_PAGE_FAULT, Context())
    assert diagnosis.rule_id == "fault.metal.command_buffer"
    text = words(diagnosis)
    assert "pip install --upgrade mlx" in text
    for other in ("nvidia-smi", "CUDA_", "TensorFlow", "tf.", "torch", "keras"):
        assert other not in text, other
