"""The ordered catalog of rules: each recognises one failure by its signatures.

Adding a new error signature is adding a rule (or a pattern to one) and a corpus case under
``tests/data/errors/<rule id>/``, never a new ``if``. Order matters where messages overlap: a
rule that needs corroboration (memory evidence behind "Failed to get convolution algorithm")
comes before the rule that takes the message at its word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from . import xid
from .model import Kind

#: Python's own errors: a message that mentions CUDA does not make a ``NameError`` a GPU failure.
#: Only a rule that names one of these types in ``types`` may match it.
PLAIN_PYTHON_TYPES = frozenset(
    {
        "NameError",
        "UnboundLocalError",
        "AttributeError",
        "SyntaxError",
        "IndentationError",
        "TabError",
        "KeyError",
        "IndexError",
        "ZeroDivisionError",
        "KeyboardInterrupt",
        "SystemExit",
        "StopIteration",
        "StopAsyncIteration",
        "GeneratorExit",
        "RecursionError",
        "ModuleNotFoundError",
        "FileNotFoundError",
        "NotImplementedError",
    }
)

_MEMORY_EVIDENCE = (
    r"CUDA_ERROR_OUT_OF_MEMORY",
    r"CUDNN_STATUS_ALLOC_FAILED",
    r"CUBLAS_STATUS_ALLOC_FAILED",
    r"\bOOM when allocating",
    r"(?i)\bout of memory\b",
    r"ran out of memory trying to allocate(?!.*caller indicates that this is not a failure)",
    r"failed to allocate [\d.]+\s*[KMGT]?i?B? \(\d+ bytes\) from device",
)
#: The allocator's state, which TensorFlow's BFC allocator prints only when it ran out.
_BFC_DUMP = (
    r"\b(?:InUse|Free) at (?:0x)?[0-9a-f]+ (?:next \d+ )?of size \d+",
    r"\bChunk at (?:0x)?[0-9a-f]+ of size \d+",
    r"\bBin \(\d+\):\s+Total Chunks: \d+",
    r"\bSum Total of in-use chunks:",
    r"\bSummary of in-use Chunks by size",
    r"^\s*MaxInUse:\s+\d+",
    r"\bRequested Size: [\d.]+\w+ \| in_use: \d",
)
_GPU_WORDS = (r"(?i)\b(?:GPU|CUDA|cuDNN|DNN|cuBLAS|device)\b",)
#: cuDNN (or the framework for it) found no algorithm to run a computation. Warnings that a
#: plan failed while another ran ("Plan failed with a cudnnException") are not this.
_NO_ENGINE = (
    r"GET was unable to find an engine to execute this computation",
    r"No valid engine configs for",
    r"No algorithm worked",
    r"(?i:cuDNN) error: CUDNN_STATUS_NOT_SUPPORTED",
    r"^\s*(?:\w+Error: |what\(\):\s+)?CUDNN_STATUS_NOT_SUPPORTED\b",
    r"Check failed: status == CUDNN_STATUS_SUCCESS \(\d+ vs\. 0\)\s+CUDNN_STATUS_NOT_SUPPORTED",
    r"Error in CuDNN: CUDNN_STATUS_NOT_SUPPORTED",
    r"CUDNN error\(\d+\), CUDNN_STATUS_NOT_SUPPORTED",
)
_NO_ENGINE_TELLS = (
    "What decides between memory and the library: an out-of-memory or allocation failure "
    "beside it means memory; without one, the cuDNN loaded does not support this "
    "computation on this GPU (a version the framework was not built for, or a missing piece)."
)


@dataclass(frozen=True)
class Rule:
    """One failure the guard recognises.

    Parameters
    ----------
    id
        Stable and dotted (``oom.tf.tensor``): tests, cards and the incident log use it.
    summary
        One sentence; ``{fact}`` fields are filled, ``<<...>>`` parts dropped when unknown.
    signatures
        Regular expressions; the rule matches an error whose message or notes match one.
    remedies
        Ids in :data:`.remedies.REMEDIES`, most likely to help first.
    types
        When given, the error's type (qualified, or its short name) must be one of these.
    in_log
        The signatures also count when found in the framework's native log of the cell.
    corroboration
        When given, one of these must also match the error or the log, or (with ``after``) the
        previous failure in this session must be of that kind.
    log_only_if
        When the rule matches only through the log, one of these must match the error itself:
        TensorFlow logs missing CUDA libraries at every import, whatever the cell did.
    cause_in_log
        The error is a symptom whose cause the framework logs ("Failed to get convolution
        algorithm... look to see if a warning log message was printed above"): a rule that
        matches the log wins over this one.
    in_source
        When given, one must match a code line of the traceback (the call that failed).
    after_watchdog_interrupt
        Only when the guard's watchdog interrupted the cell: the same ``KeyboardInterrupt``
        from the person's stop button is theirs, and passes through untouched.
    """

    id: str
    kind: Kind
    title: str
    summary: str
    signatures: tuple[str, ...]
    remedies: tuple[str, ...]
    types: tuple[str, ...] = ()
    in_log: bool = False
    corroboration: tuple[str, ...] = ()
    after: Kind | None = None
    log_only_if: tuple[str, ...] = ()
    cause_in_log: bool = False
    in_source: tuple[str, ...] = ()
    after_watchdog_interrupt: bool = False


#: A signature that matches any message: for a rule that its ``types`` and its context decide.
ANY_MESSAGE = r"^"


@cache
def compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.MULTILINE)


def first_match(patterns: tuple[str, ...], texts: tuple[str, ...]) -> str | None:
    """The first line of ``texts`` that one of ``patterns`` matches."""
    for pattern in patterns:
        regex = compiled(pattern)
        for text in texts:
            match = regex.search(text)
            if match is not None:
                return _line_of(text, match.start())
    return None


def _line_of(text: str, index: int) -> str:
    start = text.rfind("\n", 0, index) + 1
    end = text.find("\n", index)
    return text[start : end if end >= 0 else len(text)].strip()


#: Each stack keeps those it has a spelling of (:func:`.remedies.remedy_for`).
_OOM_REMEDIES = (
    "smaller_batch",
    "free_memory",
    "mixed_precision",
    "gradient_accumulation",
    "recompute_activations",
)
_ALLOCATOR_REMEDIES = ("memory_growth", "cuda_malloc_async", "expandable_segments", "stale_process")
_TF_OOM_REMEDIES = (*_OOM_REMEDIES, *_ALLOCATOR_REMEDIES)
_HANG_REMEDIES = (
    "restart_kernel",
    "smaller_work",
    "update_driver",
    "hide_integrated_gpu",
    "tcc_mode",
    "tdr_registry",
)
_LAUNCH_FAILURE = (
    r"CUDA_ERROR_LAUNCH_FAILED",
    r"cudaErrorLaunchFailure",
    r"unspecified launch failure",
)
#: What makes an unspecified launch failure a fault rather than the display watchdog's kill:
#: a GPU that drives no display (a multi-GPU job's ranks, a data-centre model).
_COMPUTE_GPU = (
    r"ProcessGroupNCCL|NCCL watchdog|\[Rank \d+\]|\[rank\d+\]",
    r"Available CUDA devices:\s*\n\s*1/[2-9]",
    r"\b(?:NVIDIA )?(?:[AHBL]100|H200|A30|A40|A10G?|L4|L40S?|V100|P100|T4|GH200|GB200|Tesla \w+)\b",
)
_LAUNCH_FAILURE_TELLS = (
    "What tells them apart: a GPU that drives a display and a kernel that ran for seconds "
    "point to the display driver's watchdog (TDR); an Xid in the kernel log (dmesg), a "
    "compute GPU or a short kernel point to a fault."
)
_CUDA_HANG_REMEDIES = (
    "restart_kernel",
    "smaller_work",
    "tcc_mode",
    "tdr_registry",
    "update_driver",
)

RULES: tuple[Rule, ...] = (
    # ---- out of memory, the commonest failure; corroborated forms first ----
    Rule(
        "oom.then_illegal_address",
        Kind.OUT_OF_MEMORY,
        "Out of {memory_of} memory",
        "The GPU ran out of memory, and the illegal memory access that followed is a "
        "consequence of it, not a second bug.",
        (
            r"an illegal memory access was encountered",
            r"CUDA_ERROR_ILLEGAL_ADDRESS",
            r"cudaErrorIllegalAddress",
        ),
        ("restart_kernel", *_OOM_REMEDIES),
        in_log=True,
        corroboration=_MEMORY_EVIDENCE,
        after=Kind.OUT_OF_MEMORY,
    ),
    Rule(
        "oom.cudnn.init",
        Kind.OUT_OF_MEMORY,
        "Out of {memory_of} memory (cuDNN could not start)",
        "cuDNN could not get the memory it needs to start<< on {device}>>: the GPU's memory was "
        "already taken.",
        (
            r"Failed to get convolution algorithm",
            r"Could not create cudnn handle",
            r"DNN library initialization failed",
            r"Fail to find the dnn implementation",
        ),
        ("memory_growth", "smaller_batch", "free_memory", "stale_process", "cuda_malloc_async"),
        in_log=True,
        corroboration=_MEMORY_EVIDENCE,
    ),
    # XLA's message comes with TensorFlow's OOM hint: it names what XLA failed to allocate
    Rule(
        "oom.xla",
        Kind.OUT_OF_MEMORY,
        "Out of {memory_of} memory (XLA)",
        "XLA could not allocate memory<< ({requested_bytes})>> for the compiled step<< on {device}>>.",
        (
            r"Out of memory while trying to allocate",
            r"RESOURCE_EXHAUSTED: Failed to allocate request for",
            r"Out of memory allocating \d+ bytes",
            r"(?i)Resource exhausted: Out of memory",
            r"Original error: RESOURCE_EXHAUSTED",
            r"BufferAssignment OOM Debugging",
            r"^\s*Entry Parameter Subshape: ",
        ),
        (*_OOM_REMEDIES, "xla_off", "memory_growth", "stale_process"),
    ),
    Rule(
        "oom.tf.tensor",
        Kind.OUT_OF_MEMORY,
        "Out of {memory_of} memory",
        "TensorFlow could not allocate<< {requested_bytes}>><< for a {dtype} tensor of shape {shape}>>"
        "<< on {device}>><< in {op}>>.",
        (
            r"\bOOM when allocating tensor",
            r"If you want to see a list of allocated tensors when OOM happens",
        ),
        _TF_OOM_REMEDIES,
        in_log=True,
    ),
    Rule(
        "oom.tf.eager",
        Kind.OUT_OF_MEMORY,
        "Out of {memory_of} memory",
        "TensorFlow could not allocate memory<< for {op}>><< on {device}>>.",
        (
            r"\bfailed to allocate memory\b",
            r"Ran out of GPU memory when allocating",
            r"EigenAllocator for GPU ran out of memory",
        ),
        _TF_OOM_REMEDIES,
        in_log=True,
    ),
    Rule(
        "oom.tf.dst_tensor",
        Kind.OUT_OF_MEMORY,
        "Out of {memory_of} memory (copying to the GPU)",
        'TensorFlow could not allocate GPU memory to copy a tensor<< to {device}>> ("Dst tensor is '
        'not initialized" is how it reports this).',
        (r"Dst tensor is not initialized",),
        ("smaller_batch", "free_memory", "stale_process", "memory_growth"),
    ),
    Rule(
        "oom.torch",
        Kind.OUT_OF_MEMORY,
        "Out of {memory_of} memory (PyTorch)",
        "PyTorch could not allocate<< {requested_bytes} of>> GPU memory<< on {device}>><<: {free_bytes} was free>>.",
        (
            r"CUDA out of memory\. Tried to allocate",
            r"CUDA error: out of memory",
            r"MPS backend out of memory",
            r"OutOfMemoryError: Allocation on device",
        ),
        (*_OOM_REMEDIES, "expandable_segments", "stale_process"),
    ),
    Rule(
        "oom.torch.cpu",
        Kind.OUT_OF_MEMORY,
        "Out of CPU memory (PyTorch)",
        "PyTorch could not allocate<< {requested_bytes}>> of the host's memory.",
        (
            r"DefaultCPUAllocator: can't allocate memory",
            r"DefaultCPUAllocator: not enough memory",
        ),
        _OOM_REMEDIES,
    ),
    Rule(
        "oom.hip",
        Kind.OUT_OF_MEMORY,
        "Out of {memory_of} memory (ROCm)",
        "The AMD GPU ran out of memory<< allocating {requested_bytes}>><< on {device}>>.",
        (r"HIP out of memory", r"HIP_ERROR_OutOfMemory", r"hipErrorOutOfMemory"),
        (*_OOM_REMEDIES, "expandable_segments", "stale_process"),
        in_log=True,
    ),
    Rule(
        "oom.cuda.driver",
        Kind.OUT_OF_MEMORY,
        "Out of {memory_of} memory",
        "The CUDA driver could not allocate<< {requested_bytes} of>> GPU memory<< on {device}>>.",
        (
            r"CUDA_ERROR_OUT_OF_MEMORY",
            r"cudaErrorMemoryAllocation",
            r"Cuda failure '?out of memory'?",
            r"cudaMalloc failed: out of memory",
        ),
        (*_TF_OOM_REMEDIES,),
        in_log=True,
    ),
    Rule(
        "oom.cudnn.no_engine",
        Kind.OUT_OF_MEMORY,
        "Out of GPU memory (cuDNN found no engine)",
        "cuDNN found no algorithm (engine) it could run, and the GPU was out of memory beside "
        "it: the workspace the algorithms need could not be had. " + _NO_ENGINE_TELLS,
        _NO_ENGINE,
        ("smaller_batch", "free_memory", "memory_growth", "mixed_precision"),
        in_log=True,
        corroboration=_MEMORY_EVIDENCE,
    ),
    Rule(
        "oom.cublas.alloc",
        Kind.OUT_OF_MEMORY,
        "Out of {memory_of} memory (cuBLAS could not start)",
        "cuBLAS could not get the memory it needs: the GPU's memory was already taken.",
        (r"CUBLAS_STATUS_ALLOC_FAILED",),
        ("memory_growth", "smaller_batch", "free_memory", "stale_process"),
        in_log=True,
    ),
    Rule(
        "oom.cudnn.alloc",
        Kind.OUT_OF_MEMORY,
        "Out of {memory_of} memory (cuDNN)",
        "cuDNN could not allocate its workspace.",
        (r"CUDNN_STATUS_ALLOC_FAILED",),
        ("memory_growth", "smaller_batch", "free_memory", "stale_process"),
        in_log=True,
    ),
    Rule(
        "oom.metal",
        Kind.OUT_OF_MEMORY,
        "Out of GPU memory (Metal)",
        "macOS aborted a Metal command buffer for lack of memory: the GPU's share of the unified "
        "memory was used up.",
        (
            r"kIO(?:GPU|Accel)CommandBufferCallbackErrorOutOfMemory",
            r"Insufficient Memory \((?:IOAF code 8|0*8:)",
        ),
        ("smaller_batch", "free_memory", "mixed_precision", "gradient_accumulation"),
        in_log=True,
    ),
    Rule(
        "oom.directml",
        Kind.OUT_OF_MEMORY,
        "Out of GPU memory (DirectML)",
        "DirectML could not allocate memory on the GPU: its video memory was used up.",
        (r"Could not allocate tensor with \d+ bytes\. There is not enough GPU video memory",),
        (*_OOM_REMEDIES, "stale_process"),
    ),
    Rule(
        "oom.tf.bfc_log",
        Kind.OUT_OF_MEMORY,
        "Out of {memory_of} memory",
        "TensorFlow's allocator<< {allocator}>> ran out of memory<< allocating {requested_bytes}>>"
        "<< for {op}>>.",
        (
            r"(?i)ran out of memory trying to allocate(?!.*caller indicates that this is not a failure)",
            *_BFC_DUMP,
        ),
        _TF_OOM_REMEDIES,
        in_log=True,
    ),
    # ---- the GPU hung or timed out ----
    Rule(
        "hang.watchdog.interrupted",
        Kind.HANG,
        "Stopped by the watchdog",
        "The cell made no progress for longer than its limit, and the guard's stall watchdog "
        "interrupted it (--on-hang interrupt); the traceback above shows where it was.",
        (r"\bWatchdogInterrupt\b", ANY_MESSAGE),
        ("check_input_pipeline", "smaller_work"),
        types=("KeyboardInterrupt", "WatchdogInterrupt", "UnknownError"),
        after_watchdog_interrupt=True,
    ),
    # NVIDIA's Xid catalog decides: a fault code over a timeout, a timeout over a cleanup
    Rule(
        "fault.xid",
        Kind.FAULT,
        "GPU fault (Xid<< {xid}: {xid_name}>>)",
        "The NVIDIA driver reported a fault of the GPU or its driver<< (Xid {xid}, {xid_name})>>.",
        (
            *xid.signatures("fault", unknown=True),
            r"fallen off the bus",
            r"Unable to determine the device handle for GPU",
            r"\bERROR_GPU_IS_LOST\b",
        ),
        ("restart_kernel", "check_hardware", "update_driver"),
        in_log=True,
    ),
    Rule(
        "hang.xid",
        Kind.HANG,
        "The GPU stopped responding (Xid<< {xid}: {xid_name}>>)",
        "The NVIDIA driver reported that the GPU stopped processing or timed out<< (Xid {xid}, "
        "{xid_name})>>, and reset the work on it.",
        (
            *xid.signatures("hang", "secondary"),
            r"CTX SWITCH TIMEOUT",
            r"GSP RM heartbeat timed out",
            r"Timeout (?:after \d+s of )?waiting for RPC (?:response )?from (?:GPU\d* )?GSP",
        ),
        ("restart_kernel", "update_driver", "check_hardware"),
        in_log=True,
    ),
    Rule(
        "hang.directml.device_hung",
        Kind.HANG,
        "The GPU timed out (device hung)",
        "Windows reset the GPU because a piece of work ran longer than its timeout "
        "(DXGI_ERROR_DEVICE_HUNG).",
        (
            r"DXGI_ERROR_DEVICE_HUNG",
            r"(?i)\b0x887a0006\b",
            r"GPU will not respond to more commands",
        ),
        _HANG_REMEDIES,
        in_log=True,
    ),
    Rule(
        "hang.directml.device_removed",
        Kind.HANG,
        "The GPU was reset (device removed)",
        "Windows removed the GPU from this process, most often after a timeout<<: {code}>>.",
        (
            r"DXGI_ERROR_DEVICE_REMOVED",
            r"DXGI_ERROR_DEVICE_RESET",
            r"(?i)\b0x887a000[57]\b",
            r"GPU device instance has been susp",
            r"D3D12: Removing Device",
            r"GetDeviceRemovedReason\(\)\)*\s*>= 0\) == true",
        ),
        _HANG_REMEDIES,
        in_log=True,
    ),
    Rule(
        "hang.directml.unrecoverable",
        Kind.HANG,
        "The GPU stopped working (DirectML)",
        "The DirectML device hit an unrecoverable error<< ({code})>>, most often a GPU timeout.",
        (
            r"DirectML device has encountered an unrecoverable error",
            r"HRESULT failed with 0x887[aA]",
        ),
        _HANG_REMEDIES,
        in_log=True,
    ),
    Rule(
        "hang.cuda.launch_timeout",
        Kind.HANG,
        "The GPU timed out",
        "A GPU kernel ran past the display driver's watchdog and was stopped (CUDA launch "
        "timeout).",
        (
            r"CUDA_ERROR_LAUNCH_TIMEOUT",
            r"cudaErrorLaunchTimeout",
            r"the launch timed out and was terminated",
        ),
        _CUDA_HANG_REMEDIES,
        in_log=True,
    ),
    Rule(
        "fault.cuda.launch_failure",
        Kind.FAULT,
        "GPU fault: a kernel failed (unspecified launch failure)",
        "A GPU kernel stopped abnormally on a compute GPU (a multi-GPU job, a data-centre GPU), "
        "where the display driver's watchdog (TDR) does not run: a fault of the kernel or of "
        "the GPU's memory. " + _LAUNCH_FAILURE_TELLS,
        _LAUNCH_FAILURE,
        ("restart_kernel", "locate_fault", "check_hardware", "update_driver"),
        in_log=True,
        corroboration=_COMPUTE_GPU,
    ),
    Rule(
        "hang.cuda.launch_failure",
        Kind.HANG,
        "A GPU kernel failed (unspecified launch failure)",
        "A GPU kernel stopped abnormally: on a GPU that drives a display (Windows' WDDM, a "
        "desktop) this is usually the display driver's watchdog (TDR) killing a long kernel; on "
        "a compute GPU it is a fault. " + _LAUNCH_FAILURE_TELLS,
        _LAUNCH_FAILURE,
        (*_CUDA_HANG_REMEDIES[:3], "locate_fault", *_CUDA_HANG_REMEDIES[3:]),
        in_log=True,
    ),
    Rule(
        "hang.tf.event_status",
        Kind.HANG,
        "The GPU stopped responding",
        "TensorFlow lost track of work it had queued on the GPU<< ({code})>>: the GPU stopped "
        "responding or was reset.",
        (r"Unexpected Event status", r"Error polling for event status"),
        _CUDA_HANG_REMEDIES,
        in_log=True,
        cause_in_log=True,
    ),
    Rule(
        "hang.rocm.gpu_hang",
        Kind.HANG,
        "The GPU stopped responding (ROCm GPU hang)",
        "The AMD GPU's queue hung, and the ROCm runtime aborted the process.",
        (
            r"HW Exception by GPU node-\d+ \(Agent handle: \S+\) reason ?:GPU Hang",
            r"reason :GPU Hang",
        ),
        ("restart_kernel", "smaller_work", "update_driver"),
        in_log=True,
    ),
    Rule(
        "hang.metal.timeout",
        Kind.HANG,
        "The GPU timed out (Metal)",
        "macOS stopped a Metal command buffer that ran longer than its timeout.",
        (
            r"kIO(?:GPU|Accel)CommandBufferCallbackError(?:Timeout|Hang)",
            r"Caused GPU (?:Timeout|Hang) Error",
            r"Command buffer execution failed: Impacting Interactivity",
        ),
        ("restart_kernel", "smaller_work"),
        in_log=True,
    ),
    Rule(
        "hang.nccl.timeout",
        Kind.HANG,
        "A collective operation timed out (NCCL)",
        "NCCL's watchdog stopped a collective operation<< ({op})>> that waited longer than its "
        "timeout: one rank did not reach it, or reached it with different data.",
        (
            r"Watchdog caught collective operation timeout",
            r"WorkNCCL\(.*\) ran for \d+ milliseconds before timing out",
            r"ProcessGroupNCCL::WorkNCCL::checkTimeout",
            r"Heartbeat monitor timed out",
            r"ProcessGroupNCCL's watchdog got stuck",
        ),
        ("collective_timeout", "restart_kernel"),
        in_log=True,
    ),
    Rule(
        "hang.collective.stalled",
        Kind.HANG,
        "Processes stopped waiting for each other",
        "The processes of a distributed job wait for one another (a collective, a barrier, a "
        "rendezvous) and one of them has not arrived: it crashed, runs other steps, or never "
        "started.",
        (
            r"submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting "
            r"for remainder of ranks",
            r"^\s*Stalled (?:ranks|ops):",
            r"Timed out initializing process group in store based barrier",
            r"Waiting in store based barrier to initialize process group",
            r"This thread has been waiting for .*(?:and may be stuck|for \d+ seconds)",
            r"Waiting for local rank \d+, bailing out",
            r"NCCL WARN Cuda failure",
            r"NCCL INFO .*unhandled cuda error",
            # a log that ends in NCCL's set-up lines: the job stopped right after it
            r"NCCL INFO [^\n]*\s*\Z",
        ),
        ("collective_timeout", "restart_kernel"),
        in_log=True,
    ),
    # ---- the GPU faulted ----
    Rule(
        "fault.cuda.unknown_error",
        Kind.FAULT,
        "GPU fault: CUDA reported an unknown error",
        "A CUDA call failed with an error the driver could not name (cudaErrorUnknown): the GPU "
        "fell into a bad state (a reset, an Xid, a power or thermal event), often long into a "
        "run.",
        (
            r"CUDA error: unknown error",
            r"\bcudaErrorUnknown\b",
            r"(?<!failed call to cuInit: )\bCUDA_ERROR_UNKNOWN\b",
        ),
        ("restart_kernel", "check_hardware", "update_driver", "locate_fault"),
        in_log=True,
    ),
    Rule(
        "fault.metal.assertion",
        Kind.FAULT,
        "GPU fault: the Metal runtime aborted the process",
        "Apple's Metal or MPSGraph stopped at an internal check while running the framework's "
        "GPU work, and aborted the whole process (the kernel dies with it).",
        (
            r"'mps\.\w+' op ",
            r"validateComputeFunctionArguments:\d+: failed assertion",
            r"mutex lock failed: Invalid argument(?=[\s\S]*\b(?:kMPS|MPS)\b)",
        ),
        ("restart_kernel", "locate_fault", "update_driver"),
        in_log=True,
    ),
    Rule(
        "fault.cuda.illegal_address",
        Kind.FAULT,
        "GPU fault: illegal memory access",
        "A GPU kernel read or wrote memory it does not own; the GPU context is now unusable.",
        (
            r"an illegal memory access was encountered",
            r"CUDA_ERROR_ILLEGAL_ADDRESS",
            r"cudaErrorIllegalAddress",
            r"Memory access fault by GPU node",
        ),
        ("restart_kernel", "locate_fault", "update_driver"),
        in_log=True,
    ),
    Rule(
        "fault.cublas.execution",
        Kind.FAULT,
        "GPU fault: a cuBLAS routine failed",
        "cuBLAS could not run a matrix routine on the GPU<< ({code})>>: an earlier kernel's "
        "invalid access (often an index out of range), or a CUDA build older than the GPU.",
        (r"CUBLAS_STATUS_EXECUTION_FAILED",),
        ("locate_fault", "check_labels", "restart_kernel", "install_matching_libraries"),
        in_log=True,
    ),
    Rule(
        "fault.rocm.hardware_exception",
        Kind.FAULT,
        "GPU fault (ROCm hardware exception)",
        "The AMD GPU raised a hardware exception while running a kernel<< ({code})>>: an invalid "
        "access or instruction; the GPU's queue was aborted.",
        (
            r"HSA_STATUS_ERROR_EXCEPTION",
            r"HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION",
            r"An HSAIL operation resulted in a hardware exception",
        ),
        ("restart_kernel", "locate_fault", "update_driver"),
        in_log=True,
    ),
    Rule(
        "fault.metal.command_buffer",
        Kind.FAULT,
        "GPU fault (Metal command buffer failed)",
        "macOS reported an internal error of a Metal command buffer, or refused the process's "
        "work after earlier GPU errors: the operations on it did not complete.",
        (
            r"kIO(?:GPU|Accel)CommandBufferCallbackErrorSubmissionsIgnored",
            r"Ignored \(for causing prior/excessive GPU errors\)",
            r"Internal Error \(0000000e:Internal Error\)",
            # an invalid address on the GPU, and the work discarded with it
            r"Caused GPU Address Fault Error",
            r"kIO(?:GPU|Accel)CommandBufferCallbackError(?:PageFault|InnocentVictim)",
            r"Discarded \(victim of GPU error/recovery\)",
        ),
        ("restart_kernel", "allow_cpu", "update_driver"),
        in_log=True,
    ),
    Rule(
        "fault.cuda.device_assert",
        Kind.FAULT,
        "GPU fault: device-side assert",
        "A check inside a GPU kernel failed, most often an index out of range (a label at or "
        "above the number of classes).",
        (r"device-side assert triggered", r"cudaErrorAssert", r"CUDA_ERROR_ASSERT"),
        ("check_labels", "locate_fault", "restart_kernel"),
        in_log=True,
    ),
    Rule(
        "fault.cuda.bad_kernel",
        Kind.FAULT,
        "GPU fault: invalid instruction or address",
        "A GPU kernel executed an invalid instruction or a misaligned access.",
        (
            r"an illegal instruction was encountered",
            r"CUDA_ERROR_ILLEGAL_INSTRUCTION",
            r"misaligned address",
            r"CUDA_ERROR_MISALIGNED_ADDRESS",
            r"CUDA_ERROR_INVALID_PC",
        ),
        ("restart_kernel", "locate_fault", "update_driver"),
        in_log=True,
    ),
    Rule(
        "fault.ecc",
        Kind.FAULT,
        "GPU hardware error (ECC)",
        "The GPU reported an uncorrectable memory (ECC) error: a hardware fault, not your code.",
        (
            r"(?i)uncorrectable ECC error",
            r"CUDA_ERROR_ECC_UNCORRECTABLE",
            r"cudaErrorECCUncorrectable",
        ),
        ("restart_kernel", "check_hardware"),
        in_log=True,
    ),
    # ---- the framework and the driver or libraries do not match ----
    Rule(
        "mismatch.cuda.driver_too_old",
        Kind.MISMATCH,
        "The NVIDIA driver is too old",
        "The installed driver cannot run the CUDA runtime the framework uses.",
        (
            r"CUDA driver version is insufficient for CUDA runtime version",
            r"cudaErrorInsufficientDriver",
            r"The NVIDIA driver on your system is too old",
            r"CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
            r"(?i)requires a minimum (?:NVIDIA )?driver version of \d+",
        ),
        ("update_driver_for_cuda", "install_matching_libraries"),
        in_log=True,
    ),
    Rule(
        "mismatch.driver.library",
        Kind.MISMATCH,
        "The NVIDIA driver's parts do not match",
        "The driver's kernel module and its user-space library are different versions (a driver "
        "update without a reboot, or a container's driver library that is not the host's).",
        (
            r"Driver/library version mismatch",
            r"kernel version \S+ does not match DSO version",
            r"CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
            r"API mismatch: the NVIDIA kernel module",
            r"cuInit: CUDA_ERROR_NOT_FOUND: named symbol not found",
        ),
        ("reload_driver", "update_driver"),
        in_log=True,
    ),
    Rule(
        "mismatch.rocm.unsupported_gpu",
        Kind.MISMATCH,
        "ROCm has no code for this GPU",
        "The ROCm build in use has no kernels for this GPU's architecture: it is not "
        "among the GPUs this release supports, or a gfx override names the wrong one.",
        (
            r"HIP error: invalid device function",
            r"\bhipErrorInvalidDeviceFunction\b",
            r"\bHSA_STATUS_ERROR_INVALID_ISA\b",
            r"\bhipErrorNoBinaryForGpu\b",
            r"rocBLAS error: Cannot read \S*TensileLibrary\S*.* for GPU arch",
            r"No paths matched \S*rocblas\S*gfx\d+",
        ),
        ("match_gpu_architecture", "update_driver"),
        in_log=True,
    ),
    Rule(
        "mismatch.mps.unsupported_op",
        Kind.MISMATCH,
        "This operation does not run on the Apple GPU (MPS)",
        "PyTorch's MPS backend has no implementation of this operation, or MPSGraph "
        "refuses its inputs (a rank or dtype it does not support).",
        (
            r"is not (?:currently )?implemented for the MPS device",
            r"MPSGraph\w*Ops\.mm:\d+: failed assertion",
        ),
        ("mps_fallback", "update_driver"),
        in_log=True,
    ),
    Rule(
        "mismatch.directml.cudnn_only_op",
        Kind.MISMATCH,
        "This layer needs a kernel the device does not have",
        "{Framework} chose the recurrent layer's fused kernel<< ({op})>>, which DirectML and the "
        "CPU have no kernel for.",
        (
            r"No OpKernel was registered to support Op 'Cudnn\w+'",
            r"Could not find device for node: \{\{node Cudnn\w+\}\}",
            r"No registered 'Cudnn\w+' OpKernel",
        ),
        ("generic_rnn", "update_driver"),
        cause_in_log=True,
    ),
    Rule(
        "mismatch.plugin",
        Kind.MISMATCH,
        "A GPU plugin does not match the framework",
        "{Framework} could not load its GPU plugin: the plugin was built for another version of "
        "{framework}.",
        (
            r"tfdml_plugin\.dll not found",
            r"libmetal_plugin\.dylib.*[Ss]ymbol not found",
            r"Mismatched PJRT plugin PJRT API version",
            r"(?i)could not find registered platform with id",
            r"Backend '\w+' is not in the list of known backends",
        ),
        ("match_plugin_version",),
    ),
    Rule(
        "mismatch.cudnn.version",
        Kind.MISMATCH,
        "cuDNN version mismatch",
        "{Framework} was built with cuDNN<< {expected_version}>> but loaded cuDNN<< {found_version}>>.",
        (
            r"Loaded runtime CuDNN library: \S+ (?:\(compatibility version \S+\) )?but source was compiled with",
            r"Found (?:cuDNN|cuBLAS|CUDA|cuFFT|cuSOLVER|cuSPARSE|NCCL|cuPTI) version \d+, but JAX was built against version",
            r"Outdated (?:cuDNN|CUDA|cuBLAS) installation found",
        ),
        ("install_matching_libraries", "restart_kernel"),
        in_log=True,
    ),
    Rule(
        "mismatch.library.missing",
        Kind.MISMATCH,
        "A CUDA library is missing",
        "The framework could not load<< {library}>>, so it cannot use the GPU.",
        (
            r"Could not load dynamic library '[^']*(?:cud|cublas|cufft|curand|cusolver|cusparse|nccl|[Dd]irect[Mm][Ll])",
            r"lib(?:cudart|cublas|cublasLt|cudnn|cufft|curand|cusolver|cusparse|cuda)[\w.]*: cannot open shared object file",
            r"(?:cudart|cublas|cudnn|cufft|curand|cusolver|cusparse)64_\d+\.dll not found",
            r"Could not (?:load library|locate) (?:cudnn|cublas|cudart)\w*\.dll",
            r"libd3d12\.so: cannot open shared object file",
            r"Could not load DirectML",
            r"Unable to load (?:cuDNN|cuBLAS)\b",
            r"(?<!backend failed to initialize: )Unable to load CUDA\b",
        ),
        ("install_matching_libraries", "check_gpu_visible"),
        in_log=True,
        log_only_if=_GPU_WORDS,
    ),
    Rule(
        "mismatch.cudnn.conv_algorithm",
        Kind.MISMATCH,
        "cuDNN failed to start",
        "cuDNN failed to initialise, so no convolution algorithm could be chosen; the log lines "
        "above it usually name the cause (a version mismatch, or memory).",
        (
            r"Failed to get convolution algorithm",
            r"DNN library is not found",
            r"DNN library initialization failed",
            r"CUDNN_STATUS_NOT_INITIALIZED",
            r"Could not create cudnn handle",
            r"Fail to find the dnn implementation",
        ),
        ("memory_growth", "install_matching_libraries", "restart_kernel"),
        in_log=True,
        cause_in_log=True,
    ),
    Rule(
        "mismatch.cudnn.no_engine",
        Kind.MISMATCH,
        "cuDNN found no engine for this computation",
        "cuDNN found no algorithm (engine) it could run for this computation. " + _NO_ENGINE_TELLS,
        _NO_ENGINE,
        ("install_matching_libraries", "memory_growth", "update_driver"),
        in_log=True,
        cause_in_log=True,
    ),
    Rule(
        "mismatch.cuda.no_kernel_image",
        Kind.MISMATCH,
        "The framework was not built for this GPU",
        "No code in the installed framework runs on this GPU's architecture.",
        (
            r"no kernel image is available for execution on the device",
            r"CUDA_ERROR_NO_BINARY_FOR_GPU",
            r"cudaErrorNoKernelImageForDevice",
            r"is not compatible with the current PyTorch installation",
            r"not built with CUDA kernel binaries compatible with compute capability",
            r"The minimum required Cuda capability is",
        ),
        ("match_gpu_architecture", "update_driver"),
        in_log=True,
    ),
    Rule(
        "mismatch.ptx",
        Kind.MISMATCH,
        "PTX compiler and driver do not match",
        "XLA could not compile GPU code: the PTX<< {found_version}>> needs a newer driver or "
        "ptxas<< (supported: {expected_version})>>.",
        (
            r"CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
            r"the provided PTX was compiled with an unsupported toolchain",
            r"Couldn't (?:get|invoke) ptxas",
            r"ptxas fatal",
            r"Unsupported \.version \S+; current version is",
            r"Can't find ptxas binary",
        ),
        ("ptx_toolchain", "update_driver_for_cuda"),
        in_log=True,
    ),
    Rule(
        "mismatch.xla.toolchain",
        Kind.MISMATCH,
        "XLA cannot find the CUDA toolchain",
        "XLA compiles GPU code at run time and needs CUDA's libdevice and a PTX compiler "
        "(ptxas or nvJitLink); this installation does not provide them where XLA looks.",
        (
            r"libdevice not found",
            r"Can't find libdevice directory",
            r"libdevice is required by this HLO module but was not found",
            r"No PTX compilation provider is available",
            r"PTX JIT compiler library not found",
        ),
        ("ptx_toolchain", "install_matching_libraries"),
        in_log=True,
    ),
    # ---- no GPU where the cell needs one ----
    Rule(
        "no_gpu.cuda.no_device",
        Kind.NO_GPU,
        "No GPU found",
        "The framework found no usable GPU.",
        (
            r"CUDA_ERROR_NO_DEVICE",
            r"no CUDA-capable device is detected",
            r"cudaErrorNoDevice",
            r"No CUDA GPUs are available",
            r"Found no NVIDIA driver on your system",
            r"Torch not compiled with C(?:UDA|$)",
            r"Unknown backend:? '?gpu'? requested",
            r"Attempting to deserialize object on a CUDA device but torch\.cuda\.is_available\(\) is False",
            r"CUDA-enabled jaxlib is not installed",
            r"No GPU/TPU found, falling back to CPU",
        ),
        ("check_gpu_visible", "install_gpu_jax", "allow_cpu"),
        in_log=True,
    ),
    Rule(
        "no_gpu.rocm.no_device",
        Kind.NO_GPU,
        "No AMD GPU found",
        "The ROCm runtime found no usable GPU.",
        (r"No HIP GPUs are available", r"\bhipErrorNoDevice\b"),
        ("check_gpu_visible", "install_gpu_pytorch", "allow_cpu"),
        in_log=True,
    ),
    Rule(
        "no_gpu.directml.no_adapter",
        Kind.NO_GPU,
        "DirectML found no GPU",
        "DirectML found no adapter it can use: no GPU with a DirectX 12 driver is visible to it.",
        (r"DirectML device enumeration: found 0 compatible adapters",),
        ("check_gpu_visible", "update_driver", "allow_cpu"),
        in_log=True,
    ),
    Rule(
        "no_gpu.tf.none_listed",
        Kind.NO_GPU,
        "TensorFlow lists no GPU",
        "tf.config.list_physical_devices('GPU') printed an empty list: TensorFlow sees no GPU.",
        (
            r"list_physical_devices\(\s*['\"]GPU['\"]\s*\)\)*\s*\n\s*(?:\[\]|0)\s*$",
            r"Num GPUs Available:\s*0\b",
        ),
        ("install_gpu_tensorflow", "check_gpu_visible", "allow_cpu"),
    ),
    Rule(
        "no_gpu.jax.backend_failed",
        Kind.NO_GPU,
        "JAX cannot use the GPU",
        "JAX's CUDA backend failed to start, so JAX runs on the CPU<< ({code})>>.",
        (
            r"CUDA backend failed to initialize",
            r"Unable to initialize backend '(?:cuda|gpu)'",
        ),
        ("install_gpu_jax", "check_gpu_visible", "allow_cpu"),
        in_log=True,
    ),
    Rule(
        "no_gpu.torch.cuda_init",
        Kind.NO_GPU,
        "PyTorch cannot use the GPU",
        "PyTorch could not initialise CUDA and set the number of GPUs to zero: the driver did not "
        "answer (a driver being updated, a container without the GPU, a suspended machine).",
        (
            r"CUDA initialization: (?:CUDA unknown error|Unexpected error from cudaGetDeviceCount)",
            r"CUDA unknown error - this may be due to an incorrectly set up environment",
        ),
        ("reload_driver", "check_gpu_visible", "allow_cpu"),
        in_log=True,
    ),
    Rule(
        "no_gpu.torch.cpu_build",
        Kind.NO_GPU,
        "This PyTorch has no CUDA",
        "The installed PyTorch is a CPU-only build: it has no CUDA kernels<< (it cannot run "
        "{op})>>, so a model or tensor on 'cuda' cannot work.",
        (
            r"Could not run '[\w:.]+' with arguments from the 'CUDA' backend",
            r"module 'torch\._C' has no attribute '_cuda_\w+'",
        ),
        ("install_gpu_pytorch", "allow_cpu"),
        types=("NotImplementedError", "AttributeError", "RuntimeError"),
    ),
    Rule(
        "no_gpu.mps.unavailable",
        Kind.NO_GPU,
        "The Apple GPU (MPS) is not available",
        "PyTorch's MPS backend cannot run here: it needs Apple silicon or an AMD GPU on a recent "
        "macOS, and a PyTorch built with MPS.",
        (
            r"The MPS backend is supported on MacOS \d+(?:\.\d+)?\+",
            r"Is MPS available\?\s*False",
        ),
        ("mps_macos", "allow_cpu"),
    ),
    Rule(
        "no_gpu.docker.no_runtime",
        Kind.NO_GPU,
        "The container has no GPU",
        "The container runtime could not give the container a GPU: the NVIDIA Container "
        "Toolkit is missing, or the host's driver is not loaded.",
        (
            r'could not select device driver "" with capabilities: \[\[gpu\]\]',
            r"nvidia-container-cli: initialization error: nvml error: driver not loaded",
        ),
        ("container_gpu_runtime", "check_gpu_visible"),
    ),
    Rule(
        "no_gpu.tf.device_pinned",
        Kind.NO_GPU,
        "The cell asks for a GPU that is not there",
        "The cell places work on a GPU<< ({device})>>, but TensorFlow sees none.",
        (
            r"Could not satisfy (?:explicit )?device specification '[^']*GPU:\d+'",
            r"device:GPU:\d+ unknown device",
            r"Cannot assign a device for operation .*GPU",
        ),
        ("check_gpu_visible", "install_gpu_tensorflow", "allow_cpu"),
        cause_in_log=True,
    ),
    Rule(
        "no_gpu.tf.empty_device_list",
        Kind.NO_GPU,
        "No GPU found",
        "tf.config.list_physical_devices('GPU') returned an empty list, so indexing it failed: "
        "TensorFlow sees no GPU.",
        (r"list index out of range",),
        ("check_gpu_visible", "install_gpu_tensorflow", "allow_cpu"),
        types=("IndexError",),
        in_source=(
            r"list_(?:physical|logical)_devices\(\s*['\"]GPU['\"]",
            r"set_memory_growth\(",
            r"set_visible_devices\(",
            r"set_(?:logical|virtual)_device_configuration\(",
        ),
    ),
    Rule(
        "no_gpu.tf.no_cuda",
        Kind.NO_GPU,
        "TensorFlow cannot use a GPU",
        "TensorFlow found no CUDA driver or libraries, so it runs on the CPU only.",
        (
            r"Could not find cuda drivers on your machine",
            r"Cannot dlopen some GPU libraries",
            r"failed call to cuInit",
        ),
        ("check_gpu_visible", "install_matching_libraries"),
        in_log=True,
        log_only_if=_GPU_WORDS,
    ),
    # ---- the data, not the GPU ----
    Rule(
        "data.incompatible_shapes",
        Kind.DATA,
        "Data error: shapes do not match",
        "Two tensors of incompatible shapes<< ({shapes})>> met in one op<< ({op})>>; the GPU "
        "is not involved.",
        (
            r"Incompatible shapes:",
            r"Matrix size-incompatible",
            r"Dimensions of inputs should match",
            r"required broadcastable shapes",
            r"dot_general requires (?:contracting dimensions|lhs batch dimensions and rhs batch "
            r"dimensions) to have the same shape",
            r"\b\w+ got incompatible shapes for broadcasting",
            r"Incompatible shapes for (?:broadcasting|dot)",
            r"must match the size of tensor \w+ \(\d+\) at non-singleton dimension",
            r"shape '\[[^\]]*\]' is invalid for input of size \d+",
            r"expected input\[[\d, ]+\] to have \d+ channels, but got \d+ channels",
            r"Expected \d+-dimensional input for \d+-dimensional weight",
            r"input to \w+, but got input of size",
            r"Shapes must be equal rank",
        ),
        ("check_shapes",),
    ),
    Rule(
        "data.dtype_mismatch",
        Kind.DATA,
        "Data error: dtypes do not match",
        "A tensor is<< {found_dtype}>> where the op expects<< {expected_dtype}>>; the GPU is not "
        "involved.",
        (
            r"expected to be a \w+ tensor but is a \w+ tensor",
            r"has type \w+ that does not match (?:expected )?type",
            r"Tensor conversion requested dtype \w+ for Tensor with dtype \w+",
            r"expected scalar type \w+ but found \w+",
            r"Expected object of scalar type \w+ but got scalar type \w+ for argument",
            r"Found dtype \w+ but expected \w+",
            r"result type \w+ can't be cast to the desired output type \w+",
        ),
        ("cast_dtype", "check_shapes"),
    ),
    Rule(
        "data.keras_input",
        Kind.DATA,
        "Data error: input does not fit the model",
        "The data's shape does not match the model's input<< (expected {shapes})>><< (expected "
        "{expected_ndim} dimensions, given {found_ndim})>>; the GPU is not involved.",
        (
            r"Input \d+ of layer .* is incompatible with the layer",
            r"Input \d+ is incompatible with layer \S+: expected",
            r"expected shape=\([^)]*\), found shape=",
            r"expected (?:min_|max_)?ndim=\d+, found ndim=\d+",
        ),
        ("check_shapes",),
    ),
    Rule(
        "data.logits_labels",
        Kind.DATA,
        "Data error: labels do not fit the output",
        "The labels' shape<< {labels_shape}>> does not match the model's output<< {output_shape}>>; "
        "the GPU is not involved.",
        (
            r"logits and labels must have the same first dimension",
            r"logits and labels must be broadcastable",
            r"Shapes \([^)]*\) and \([^)]*\) are incompatible",
            r"Arguments `target` and `output` must have the same (?:rank|shape)",
            r"Target size \(torch\.Size\(\[[^\]]*\]\)\) must be the same as input size",
            r"Using a target size \(torch\.Size\(\[[^\]]*\]\)\) that is different to the input "
            r"size",
            r"Expected input batch_size \(\d+\) to match target batch_size \(\d+\)",
            r"multi-target not supported",
        ),
        ("check_shapes",),
    ),
    Rule(
        "data.label_out_of_range",
        Kind.DATA,
        "Data error: a label or index is out of range",
        "A label or index<< ({label})>> is outside the valid range<< {valid_range}>>; the GPU is "
        "not involved.",
        (
            r"Received a label value of -?\d+ which is outside the valid range",
            r"indices(?:\[[\d,]+\])? = -?\d+ is not in \[",
        ),
        ("check_labels", "check_shapes"),
    ),
    Rule(
        "data.index_out_of_range",
        Kind.DATA,
        "Data error: an index is out of range",
        "An index given to an embedding, a lookup or a loss is at or above the number of rows or "
        "classes it has (a token id past the vocabulary, a label past the classes); the GPU is "
        "not involved.",
        (r"\bindex out of range in self\b", r"\bTarget -?\d+ is out of bounds"),
        ("check_labels", "check_shapes"),
        types=("IndexError",),
    ),
    Rule(
        "data.no_adapter",
        Kind.DATA,
        "Data error: fit cannot read this input",
        "Keras has no adapter for the type of data given to fit<< ({input_types})>>: lists of "
        "arrays, dicts of lists or an object of its own are not read as batches; the GPU is not "
        "involved.",
        (
            r"Failed to find data adapter that can handle input",
            r"Unrecognized data type: x=",
        ),
        ("convert_input", "check_shapes"),
    ),
    Rule(
        "data.batch_shapes",
        Kind.DATA,
        "Data error: elements of a batch differ in shape",
        "The elements of a batch differ in shape<< ({first_shape} and {other_shape})>>, so they "
        "cannot be stacked into one batch; the GPU is not "
        "involved.",
        (
            r"Cannot batch tensors with different shapes in component",
            r"Cannot add tensor to the batch: number of elements does not match",
            r"stack expects each tensor to be equal size, but got",
            r"all input arrays must have the same shape",
            # a traceback cut at the collate function's stack: the items' shapes differ
            r"collate\w*\((?:.*\n){1,30}?.*\b(?:np|numpy|torch)\.stack\([^\n]*"
            r"(?:\n\s*File \"[^\"]*\", line \d+, in \w+)*\s*\Z",
        ),
        ("pad_batches", "check_shapes"),
    ),
    Rule(
        "data.reshape",
        Kind.DATA,
        "Data error: a reshape does not fit",
        "A tensor of<< {input_values}>> values cannot be reshaped to the shape asked for<< "
        "({requested_values} values)>>; the GPU is not involved.",
        (
            r"Input to reshape is a tensor with \d+ values, but the requested shape (?:has|requires a multiple of) \d+",
        ),
        ("check_shapes",),
    ),
    Rule(
        "data.object_array",
        Kind.DATA,
        "Data error: the array holds Python objects",
        "A NumPy array of dtype object<< (holding {found_dtype})>> cannot become a tensor: mixed or "
        "ragged values made NumPy fall back to objects; the GPU is not involved.",
        (r"Failed to convert a NumPy array to a Tensor \(Unsupported object type",),
        ("numeric_array",),
    ),
    Rule(
        "data.missing_feature",
        Kind.DATA,
        "Data error: a record lacks a feature",
        "A TFRecord example does not hold the feature the parser asks for<< ({feature})>>, or holds "
        "it with another type; the GPU is not involved.",
        (
            r"Feature: \S+ \(data type: \w+\) is required but could not be found",
            r"Key: \S+\.\s+Data types don't match",
            r"Key: \S+\.\s+Can't parse serialized Example",
        ),
        ("check_features",),
    ),
    Rule(
        "data.cardinality",
        Kind.DATA,
        "Data error: inputs and labels differ in length",
        "The arrays passed to fit hold different numbers of samples; the GPU is not involved.",
        (r"Data cardinality is ambiguous",),
        ("check_shapes",),
    ),
    Rule(
        "data.ran_out",
        Kind.DATA,
        "Data error: the input ran out of batches",
        "fit asked for more batches than the data gives (steps_per_epoch × epochs, or "
        "validation_steps), so training stopped early; the GPU is not involved.",
        (r"Your input ran out of data",),
        ("enough_batches",),
    ),
    Rule(
        "data.unreadable_file",
        Kind.DATA,
        "Data error: a file cannot be read",
        "A file of the data set is empty, cut short or not what its name says (an image that "
        "does not decode, a checkpoint whose header is incomplete); the GPU is not involved.",
        (
            r"cannot identify image file",
            r"\bUnidentifiedImageError\b",
            r"Invalid JPEG data",
            r"Premature end of JPEG",
            r"image file is truncated",
            r"Caught OSError in DataLoader worker process",
            r"SafetensorError: Error while deserializing header",
        ),
        ("check_files",),
        in_log=True,
    ),
)
