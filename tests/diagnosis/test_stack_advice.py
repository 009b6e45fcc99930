"""Every card speaks of its own stack: the corpus' cards name no other framework, and no other
vendor's tools, than those of the error they explain.

The stack of a case is its sidecar's ``framework`` and ``vendor``, given by the reader who
filed it; the card's advice is everything it says beyond the error's own facts: the title, the
summary, the evidence and each remedy (title, why, steps, note, links).
"""

from __future__ import annotations

import re

import pytest

from ipy_gpuguard.diagnosis import Diagnosis

from .corpus import CASES, Case

#: How each framework's name, modules and settings show in a card.
FRAMEWORK_WORDS = {
    "tensorflow": r"TensorFlow|tensorflow|\btf\.|\bTF_[A-Z_]+",
    "keras": r"\b[Kk]eras\b",
    "pytorch": r"PyTorch|\btorch\b|\bPYTORCH_\w+|\bTORCH_\w+",
    "jax": r"\bJAX\b|\bjax\b|\bjaxlib\b|\bXLA_PYTHON_CLIENT_\w+|\boptax\b",
    "mlx": r"\bMLX\b|\bmlx\b",
}
#: Each vendor's own tools and settings.
VENDOR_TOOLS = {
    "nvidia": r"nvidia-smi|\bNVIDIA\b|\bCUDA_[A-Z_]+|compute-sanitizer|\bTCC\b|cuda_malloc_async"
    r"|\bnvcc\b|\bptxas\b|\bcuDNN\b|\bCUDA (?:toolkit|driver|runtime|\d)|cudatoolkit"
    r"|jax\[cuda|\[and-cuda\]|Container Toolkit",
    "amd": r"rocm-smi|rocminfo|\bROCm\b|\bHIP_\w+|\bHSA_\w+|\bamdgpu\b|AMD drivers",
    "apple": r"\bMPS\b|PYTORCH_MPS_\w+|\bmacOS\b|\bMetal\b|tensorflow-metal|Activity Monitor",
    "directml": r"DirectML|\bDML_\w+|torch[-_]directml|tensorflow-directml",
}
#: The frameworks a case's card may name, by the sidecar's ``framework``: Keras 2 is
#: TensorFlow's; a Keras case may run on any backend; another project's error names none.
MAY_NAME = {
    "pytorch": {"pytorch"},
    "vllm": {"pytorch"},
    "tch-rs": {"pytorch"},
    "torch-directml": {"pytorch"},
    "tensorflow": {"tensorflow", "keras"},
    "tensorflow-directml": {"tensorflow", "keras"},
    "tensorflow-metal": {"tensorflow", "keras"},
    "keras": {"keras", "tensorflow", "jax", "pytorch"},
    "jax": {"jax"},
    "mlx": {"mlx"},
}


def advice(diagnosis: Diagnosis) -> str:
    """What the card says of its own, without the facts quoted from the error."""
    parts = [diagnosis.title, diagnosis.summary, *diagnosis.evidence]
    for remedy in diagnosis.remedies:
        parts += [remedy.title, remedy.why, *remedy.steps, remedy.note]
        parts += [title for title, _ in remedy.links]
    # PyTorch's own API keeps CUDA's name on every vendor (torch.cuda on ROCm)
    return re.sub(r"torch\.cuda\b|device_type=\"cuda\"", "torch", "\n".join(parts))


def named_frameworks(text: str) -> set[str]:
    return {name for name, words in FRAMEWORK_WORDS.items() if re.search(words, text)}


def named_vendors(text: str) -> set[str]:
    return {name for name, words in VENDOR_TOOLS.items() if re.search(words, text)}


def wrong_stack(case: Case) -> list[str]:
    """What the case's card names that is not of the case's stack."""
    text = advice(case.diagnose())
    wrong = sorted(named_frameworks(text) - MAY_NAME.get(case.sidecar["framework"], set()))
    vendor = case.sidecar["vendor"]
    if vendor != "none":
        wrong += sorted(named_vendors(text) - {vendor})
    return wrong


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_each_card_names_only_its_own_framework_and_vendor(case):
    assert wrong_stack(case) == []


def test_the_advice_reader_sees_what_the_issue_saw():
    """The words that the wrong cards of issue 36 used are found by this file's readers."""
    keras_advice = 'keras.mixed_precision.set_global_policy("mixed_float16")'
    assert named_frameworks(keras_advice) == {"keras"}
    assert named_frameworks("Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True") == {"pytorch"}
    assert named_vendors("nvidia-smi lists the processes") == {"nvidia"}
    assert named_vendors("Set TF_GPU_ALLOCATOR=cuda_malloc_async") == {"nvidia"}
    assert named_frameworks("torch.cuda.empty_cache()") == {"pytorch"}
    assert named_vendors(advice_of("torch.cuda.empty_cache()")) == set()


def advice_of(step: str) -> str:
    return re.sub(r"torch\.cuda\b", "torch", step)
