"""The second stage: a "looks like" kind from families of evidence, never before a precise rule."""

from __future__ import annotations

import pytest

from ipy_gpuguard.diagnosis import Context, Kind, diagnose
from ipy_gpuguard.diagnosis.facts import extract_facts


def test_a_precise_rule_decides_before_the_evidence():
    text = "ResourceExhaustedError: OOM when allocating tensor with shape[64,1024] and type float"
    assert diagnose(text, Context()).rule_id == "oom.tf.tensor"


def test_an_unseen_wording_gets_the_kind_its_evidence_points_to_and_says_it_is_a_guess():
    diagnosis = diagnose("CUDA error 2 at ggml-cuda.cu:359: out of memory", Context())
    assert diagnosis.rule_id == "oom.likely"
    assert diagnosis.title.startswith("Looks like")
    assert [remedy.id for remedy in diagnosis.remedies][:1] == ["smaller_batch"]


@pytest.mark.parametrize(
    "text",
    [
        # memory words without a word of the GPU stack: a host problem, not the GPU's
        "RuntimeError: failed to allocate 5.00 GiB: out of memory",
        # Python's own errors are never the GPU's, whatever they mention
        "KeyError: 'cuda out of memory, failed to allocate 2 GiB'",
        # a line that says of itself that it is harmless is no evidence
        "W bfc_allocator.cc:290] Allocator (GPU_0_bfc) ran out of memory trying to allocate "
        "2.00GiB with freed_by_count=0. The caller indicates that this is not a failure, but may "
        "mean that there could be performance gains if more memory were available.",
        # two kinds equally supported: no guess
        "RuntimeError: GPU operation timed out after a page fault",
    ],
)
def test_no_guess_without_clear_evidence(text):
    assert diagnose(text, Context()).kind is Kind.UNKNOWN


def test_a_shape_error_of_another_framework_is_the_datas():
    diagnosis = diagnose(
        "RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x512 and 256x10)"
    )
    assert diagnosis.kind is Kind.DATA
    assert not diagnosis.is_gpu_failure


def test_a_pasted_log_without_an_exception_is_read_as_the_error():
    text = (
        "2020-11-24 11:32:25.434730: E tensorflow/stream_executor/cuda/cuda_driver.cc:868] "
        "failed to alloc 4294967296 bytes on host: CUDA_ERROR_OUT_OF_MEMORY: out of memory"
    )
    assert diagnose(text, Context()).rule_id == "oom.cuda.driver"


def test_launcher_prefixes_are_read_through():
    text = (
        "[rank3]: Traceback (most recent call last):\n"
        '[rank3]:   File "train.py", line 212, in <module>\n'
        "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    )
    diagnosis = diagnose(text, Context())
    assert diagnosis.rule_id == "oom.torch"
    assert diagnosis.error_type == "torch.OutOfMemoryError"
    assert diagnosis.facts["requested_bytes"] == 2 * 1024**3


def test_locale_formatted_sizes_are_read():
    facts = extract_facts(
        ["Tried to allocate 1,50 GiB (GPU 0; 4,00 GiB total capacity; 1.234 bytes free;"]
    )
    assert facts["requested_bytes"] == int(1.5 * 1024**3)
    assert facts["total_bytes"] == 4 * 1024**3
