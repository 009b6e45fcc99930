"""The second stage: a kind for what no precise rule recognises, read from families of evidence.

People paste errors in wordings no rule has seen: another framework's, another version's, a
library's own. The words around the failure still say what kind it is: memory words with
sizes, library names with versions, driver and toolchain names, shape and dtype phrases,
device-assignment phrases. Each family adds to the score of one kind; the best kind wins when
it is clearly ahead, and the card says "looks like", with the kind's generic remedies and no
claim that the evidence cannot back.

The precise rules always decide first. A plain Python error, or a text without a word of
the GPU stack, never gets a GPU kind here.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from .model import Kind
from .report import ErrorReport
from .rules import PLAIN_PYTHON_TYPES, Rule, first_match

_SIZE = r"\d+(?:[.,]\d+)?\s*(?:[KMGT]i?B|bytes)\b"
#: Words of the GPU stack, a GPU kind needs one; letters, not word boundaries, delimit them
#: (``ggml_cuda_host_malloc``, ``cudnn_ops_infer64_8.dll``).
GPU_WORDS = (
    r"(?i)(?<![a-z])(?:gpu|amdgpu|cuda|cudnn|cublas|cudart|nccl|rocm|hip|directml|metal|mps|xla|nvidia"
    r"|tensorrt)(?![a-z])",
)
#: What makes a shape error the data's: the framework raised it, or it speaks of tensors.
_TENSOR_WORDS = (r"(?i)\b(?:tensors?|layer|batch|inputs?|mat[12])\b",)


@dataclass(frozen=True)
class Family:
    """A family of evidence: its patterns, the kind it points to, and how much it counts."""

    name: str
    kind: Kind
    patterns: tuple[str, ...]
    weight: int


FAMILIES = (
    Family(
        "memory words",
        Kind.OUT_OF_MEMORY,
        (
            r"(?i)\bout of (?:GPU |device |video )?memory\b",
            r"(?i)\b(?:insufficient|not enough) (?:GPU |device |video )?memory\b",
            r"(?i)\b(?:failed to|could not|cannot|unable to) allocate\b",
            r"(?i)\ballocation (?:of \S+ )?failed\b",
            r"\bRESOURCE_EXHAUSTED\b",
            r"\bcudaMalloc(?:Async)? failed\b",
        ),
        2,
    ),
    Family(
        "a size beside memory words",
        Kind.OUT_OF_MEMORY,
        (r"(?i)\b(?:allocat\w*|memory|free|reserved)\b[^\n]{0,60}?" + _SIZE,),
        1,
    ),
    Family(
        "library names",
        Kind.MISMATCH,
        (
            r"(?i)\b(?:lib)?(?:cudnn|cublas(?:Lt)?|cudart|cufft|curand|cusolver|cusparse|nccl|nvrtc"
            r"|nvjitlink|cupti|cuda)[\w]*(?:\.so[\d.]*|\.dll|\.dylib)",
            r"(?i)\b(?:cuDNN|cuBLAS|CUDA runtime|CUDA toolkit|NCCL) (?:version|library)\b",
        ),
        1,
    ),
    Family(
        "versions and loading",
        Kind.MISMATCH,
        (
            r"(?i)\bversion mismatch\b",
            r"(?i)\b(?:compiled|built) (?:with|against)\b",
            r"(?i)\bDLL load failed\b",
            r"(?i)\bError loading \"?[^\n]*\.(?:dll|so)",
            r"(?i)\b(?:could not be found|cannot open shared object file|undefined symbol)\b",
            r"(?i)\bis too old\b",
        ),
        1,
    ),
    Family(
        "driver and toolchain names",
        Kind.MISMATCH,
        (
            r"(?i)\b(?:NVIDIA driver|driver version|kernel module|ptxas|nvcc|libdevice|nvlink|cuInit)\b",
        ),
        1,
    ),
    Family(
        "device-assignment phrases",
        Kind.NO_GPU,
        (
            r"(?i)\bno (?:CUDA[- ]capable |NVIDIA |usable )?(?:GPUs?|devices?) (?:were |was |is |are )?"
            r"(?:found|available|detected|visible)\b",
            r"(?i)\binvalid device ordinal\b",
            r"(?i)\bavailable devices to be zero\b",
            r"(?i)\bdevice count(?: is)?:? 0\b",
            r"(?i)\bis_available\(\) (?:is|returned|returns) False\b",
            r"(?i)\bnot compiled with (?:CUDA|GPU)\b",
        ),
        2,
    ),
    Family(
        "shape and dtype phrases",
        Kind.DATA,
        (
            r"(?i)^(?=[^\n]*\b(?:incompatible|mismatch|cannot|can't|expected|must|invalid"
            r"|do(?:es)?(?: not|n't) match|not compatible)\b)"
            r"[^\n]*\b(?:shapes?|dims?|dimensions?|rank|dtype)\b[^\n]{0,80}?"
            r"(?:[\[(]\s*(?:None|\?|\d+)(?:\s*,\s*(?:None|\?|\d+))+\s*[\])]|\b\d+x\d+\b)",
        ),
        2,
    ),
    Family(
        "timeouts",
        Kind.HANG,
        (
            r"(?i)\b(?:timed out|time-?out|hung|stopped responding|not responding|GPU is lost)\b",
            r"(?<![A-Za-z])TDR(?![a-z])",
        ),
        2,
    ),
    Family(
        "faults",
        Kind.FAULT,
        (
            r"(?i)\b(?:illegal (?:memory access|instruction|address)|page fault|memory access fault"
            r"|misaligned address|uncorrectable ECC)\b",
        ),
        2,
    ),
)

#: Lines that say of themselves that they are harmless: never evidence.
_HARMLESS = (
    r"(?i)this is not a failure",
    r"(?i)this does not indicate an error",
    r"(?i)you can ignore this message",
    r"Delay kernel timed out: measured time has sub-optimal accuracy",
)
#: Ahead of every other kind by this much, and at least this much in all.
MIN_SCORE = 2

LIKELY_RULES: tuple[Rule, ...] = (
    Rule(
        "oom.likely",
        Kind.OUT_OF_MEMORY,
        "Looks like the GPU ran out of memory",
        "No precise rule recognises this error, but its wording is that of a failed allocation.",
        (),
        ("smaller_batch", "free_memory", "mixed_precision"),
    ),
    Rule(
        "mismatch.likely",
        Kind.MISMATCH,
        "Looks like a CUDA library or driver problem",
        "No precise rule recognises this error, but it names GPU libraries or the driver with "
        "versions or a failed load.",
        (),
        ("install_matching_libraries", "update_driver"),
    ),
    Rule(
        "no_gpu.likely",
        Kind.NO_GPU,
        "Looks like no GPU is usable",
        "No precise rule recognises this error, but it says that no GPU device is available.",
        (),
        ("check_gpu_visible", "allow_cpu"),
    ),
    Rule(
        "data.likely",
        Kind.DATA,
        "Looks like a data error",
        "No precise rule recognises this error, but it is about shapes or dtypes of the data, "
        "which the GPU does not cause.",
        (),
        ("check_shapes", "cast_dtype"),
    ),
    Rule(
        "hang.likely",
        Kind.HANG,
        "Looks like the GPU stopped responding",
        "No precise rule recognises this error, but it reports a GPU operation that timed out.",
        (),
        ("restart_kernel", "smaller_work", "update_driver"),
    ),
    Rule(
        "fault.likely",
        Kind.FAULT,
        "Looks like a GPU fault",
        "No precise rule recognises this error, but it reports an invalid access on the GPU.",
        (),
        ("restart_kernel", "locate_fault"),
    ),
)
_BY_KIND = {rule.kind: rule for rule in LIKELY_RULES}


def likely_rule(report: ErrorReport) -> tuple[Rule, str] | None:
    """The kind the evidence points to, as its "looks like" rule and the line that says most."""
    if not report.links or _is_excluded(report.error_type):
        return None
    texts = tuple(_without_harmless_lines(link.text) for link in report.links)
    scores: Counter[Kind] = Counter()
    lines: dict[Kind, str] = {}
    for family in FAMILIES:
        matched = first_match(family.patterns, texts)
        if matched is not None:
            scores[family.kind] += family.weight
            lines.setdefault(family.kind, matched)
    ranked = scores.most_common()
    if not ranked or ranked[0][1] < MIN_SCORE:
        return None
    (kind, best), runner_up = ranked[0], (ranked[1][1] if len(ranked) > 1 else 0)
    if best <= runner_up:
        return None
    if kind.is_gpu_failure and first_match(GPU_WORDS, texts) is None:
        return None
    from_the_data = report.raised_by_framework or first_match(GPU_WORDS + _TENSOR_WORDS, texts)
    if kind is Kind.DATA and not from_the_data:
        return None
    return _BY_KIND[kind], lines[kind]


def _without_harmless_lines(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if first_match(_HARMLESS, (line,)) is None)


def _is_excluded(error_type: str) -> bool:
    """Python's own errors are not the GPU's, whatever their message mentions."""
    return error_type.rsplit(".", 1)[-1] in PLAIN_PYTHON_TYPES
