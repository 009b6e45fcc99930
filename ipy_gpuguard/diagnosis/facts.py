"""Facts read out of error text: the tensor's shape and dtype, the bytes asked for, the device.

Each pattern names its captures after the fact they give (``requested_bytes``, ``shape``); a
fact's name says its unit and how its text is read. The first pattern that finds a fact wins,
so more exact spellings come first (``rounded to 1638400000`` before ``1.53GiB``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping

from ..telemetry.units import format_bytes
from .model import FactValue

#: A size; it starts where a number starts, so that a long run of digits is read once.
_SIZE = r"(?<![\d.,])\d+(?:[.,]\d+)*\s*(?:[KMGT]i?B?|B|bytes)?"
_BINARY_UNITS = {"": 1, "b": 1, "bytes": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}

#: Bytes per element for the dtype spellings of TensorFlow (``float``), NumPy (``float32``)
#: and XLA (``f32``).
DTYPE_BYTES = {
    **dict.fromkeys(("bool", "pred", "int8", "uint8", "qint8", "quint8", "s8", "u8"), 1),
    **dict.fromkeys(("half", "float16", "bfloat16", "f16", "bf16", "int16", "uint16"), 2),
    **dict.fromkeys(("s16", "u16", "qint16", "quint16"), 2),
    **dict.fromkeys(("float", "float32", "f32", "int32", "uint32", "s32", "u32", "qint32"), 4),
    **dict.fromkeys(("double", "float64", "f64", "int64", "uint64", "s64", "u64"), 8),
    **dict.fromkeys(("complex64", "c64"), 8),
    **dict.fromkeys(("complex128", "c128"), 16),
}

#: Generic node names that say nothing about where the memory went.
_GENERIC_OPS = re.compile(r"^(?:StatefulPartitionedCall|PartitionedCall|__inference_\w+)$")

FACT_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern)
    for pattern in (
        # out of memory: TensorFlow, XLA, CUDA, PyTorch, HIP
        r"OOM when allocating tensor (?:with|of) shape\s*\[(?P<shape>[\d,\s]*)\] and type (?P<dtype>\w+)",
        r"Shape: (?P<dtype>[a-z]+\d*)\[(?P<shape>[\d,]*)\]",
        r"rounded to (?P<requested_bytes>\d+)\)",
        r"allocate(?: request for)? [\d.]+\s*[KMGT]?i?B? \((?P<requested_bytes>\d+)(?: bytes|B)\)",
        r"(?:failed to allocate|trying to allocate|[Tt]ried to allocate|Failed to allocate request for)\s+(?P<requested_bytes>"
        + _SIZE
        + r")",
        r"Allocation of (?P<requested_bytes>\d+) exceeds",
        r"Out of memory allocating (?P<requested_bytes>\d+) bytes",
        r"by allocator (?P<allocator>[\w.]+)",
        r"Allocator \((?P<allocator>(?P<device>(?:GPU|CPU)_\d+)_bfc)\) ran out of memory",
        r"Allocator \((?P<allocator>(?P<device>bfc_cpu)_allocator\w*)\) ran out of memory",
        r"Allocator \((?P<allocator>\w+)\) ran out of memory",
        r"(?P<device>cpu)_allocator_impl\.cc:\d+\] Allocation of (?P<requested_bytes>\d+) exceeds",
        r"(?P<total_bytes>" + _SIZE + r") total capacity",
        r"total capac(?:i)?ty of (?P<total_bytes>" + _SIZE + r")",
        r"(?P<free_bytes>" + _SIZE + r") free;",
        r"of which (?P<free_bytes>" + _SIZE + r") is free",
        r"(?P<allocated_bytes>" + _SIZE + r") already allocated",
        r"memory (?P<allocated_bytes>" + _SIZE + r") is allocated by (?:PyTorch|the framework)",
        r"(?P<reserved_bytes>" + _SIZE + r") reserved in total by PyTorch",
        r"(?P<reserved_bytes>" + _SIZE + r") is reserved by PyTorch but unallocated",
        # where: device, op, layer
        r"Failed copying input tensor from \S+ to \S*device:(?P<device>\w+:\d+)",
        r"device:(?P<device>(?:GPU|CPU|DML|XLA_GPU|XLA_CPU):\d+)",
        r"\bGPU (?P<device>\d+)(?: has a total|;)",
        r"on device ordinal (?P<device>\d+)",
        r"\[\[\{\{node (?P<op>[^}]+)\}\}\]\]",
        r"\[\[node (?P<op>[^\s\]]+)",
        r"Detected at node '?(?P<op>[\w/.-]+)'?",
        r"requested by op (?P<op>[\w/.-]+)",
        r"\[Op:(?P<op>\w+)\]",
        # hangs, faults, codes
        r"HRESULT failed with 0x(?P<code>[0-9a-fA-F]{8})(?::\s*(?P<api_call>\S.*?))?\s*$",
        r"\((?P<code>DXGI_ERROR_\w+)\)",
        r"\b(?P<code>CUDA_ERROR_\w+|CUDNN_STATUS_\w+|CUBLAS_STATUS_\w+|HIP_ERROR_\w+|DXGI_ERROR_\w+|cudaError\w+|hipError\w+|HSA_STATUS_ERROR_\w+)",
        r"\b(?P<code>(?:0x)?887[aA]00[0-2][0-9a-fA-F])\b",
        r"(?P<api_call>failed to query event|could not synchronize on CUDA context|failed to (?:enqueue|launch|run) \w+|cu[A-Z]\w+|cuda(?!Error)[A-Z]\w+)(?:\(\))?(?: failed)?[:.]",
        # libraries and versions
        r"Loaded runtime (?P<library>CuDNN) library: (?P<found_version>\d+(?:\.\d+)*).*?compiled with:? (?P<expected_version>\d+(?:\.\d+)*)",
        r"(?P<library>CUDA driver) version is insufficient for (?P<expected_version>CUDA runtime) version",
        r"Could not load dynamic library '(?P<library>[^']+)'",
        r"(?P<library>\blib[\w+-]+\.so[\d.]*|\b\w+64_\d+\.dll): cannot open shared object file",
        r"Unsupported \.version (?P<found_version>\d+(?:\.\d+)*); current version is '(?P<expected_version>\d+(?:\.\d+)*)'",
        r"\b(?P<library>ptxas)\b",
        # data errors
        r"Incompatible shapes: (?P<shapes>\[[\d,\s]*\] vs\. \[[\d,\s]*\])",
        r"got logits shape (?P<output_shape>\[[\d,\s]*\]) and labels shape (?P<labels_shape>\[[\d,\s]*\])",
        r"Shapes (?P<labels_shape>\([^)]*\)) and (?P<output_shape>\([^)]*\)) are incompatible",
        r"target\.shape=(?P<labels_shape>\([^)]*\)), output\.shape=(?P<output_shape>\([^)]*\))",
        r"expected (?:axis -?\d+ of )?input shape to have value (?P<shapes>\d+), but received input with shape (?:\([\w,\s]*\)|\[[\w,\s]*\])",
        r"expected shape=(?P<shapes>\([\w,\s]*\)), found shape=\([\w,\s]*\)",
        r"expected to be a (?P<expected_dtype>\w+) tensor but is a (?P<found_dtype>\w+) tensor",
        r"has type (?P<found_dtype>\w+) that does not match (?:expected )?type (?P<expected_dtype>\w+)",
        r"Received a label value of (?P<label>-?\d+) which is outside the valid range of (?P<valid_range>\[[^)]*\))",
        r"indices(?:\[[\d,]+\])? = (?P<label>-?\d+) is not in (?P<valid_range>\[[^)]*\))",
        r"First element had shape (?P<first_shape>\[[\d,\s]*\]) and element \d+ had shape (?P<other_shape>\[[\d,\s]*\])",
        r"stack expects each tensor to be equal size, but got (?P<first_shape>\[[\d,\s]*\]) at entry \d+ and (?P<other_shape>\[[\d,\s]*\])",
        r"expected scalar type (?P<expected_dtype>\w+) but found (?P<found_dtype>\w+)",
        r"Expected object of scalar type (?P<expected_dtype>\w+) but got scalar type (?P<found_dtype>\w+)",
        r"[Tt]arget size \(torch\.Size\((?P<labels_shape>\[[\d,\s]*\])\)\) (?:must be the same as|that is different to the) input size \(torch\.Size\((?P<output_shape>\[[\d,\s]*\])\)\)",
        r"got incompatible shapes for broadcasting: (?P<shapes>\([\d,\s]*\), \([\d,\s]*\))",
        r"Incompatible shapes for broadcasting: (?P<shapes>\(\([\d,\s]*\), \([\d,\s]*\)\)|shapes=\[[^\]\n]*\])",
        r"to have the same shape, got (?P<shapes>\([\d,\s]*\) and \([\d,\s]*\)|\[[\d\s]*\] and \[[\d\s]*\])",
        r"expected (?:min_|max_)?ndim=(?P<expected_ndim>\d+), found ndim=(?P<found_ndim>\d+)",
        r"Failed to find data adapter that can handle input: (?P<input_types>[^\n]+)",
        r"Unrecognized data type: x=.*? \(of type (?P<input_types><class '[^']+'>)\)",
        r"Could not run '(?P<op>[\w:.]+)' with arguments from the 'CUDA' backend",
        r"Input to reshape is a tensor with (?P<input_values>\d+) values, but the requested shape (?:has|requires a multiple of) (?P<requested_values>\d+)",
        r"Unsupported object type (?P<found_dtype>[\w.]+)\)",
        r"Feature: (?P<feature>\S+) \(data type: \w+\) is required",
        r"Key: (?P<feature>[^\s.]+(?:\.[^\s.]+)*)\.\s+(?:Data types don't match|Can't parse)",
        # collectives
        r"WorkNCCL\(SeqNum=\d+, OpType=(?P<op>\w+)",
    )
)


#: TensorFlow's header of an error raised in a ``tf.data`` iterator's op, with the device it
#: placed the op on: always the CPU, where the pipeline runs, whatever the person's code inside
#: it (a generator, a ``py_function``) allocated on. A JAX out-of-memory error there names no
#: device of its own, and was read as out of CPU memory.
_PIPELINE_PLACEMENT = re.compile(
    r"\{\{function_node __wrapped__\w*Iterator\w*?_device_/job:[^}]*\}\}"
)


def extract_facts(texts: Iterable[str]) -> dict[str, FactValue]:
    """Every fact the patterns find in ``texts`` (earlier texts first), read into its type."""
    found: dict[str, FactValue] = {}
    texts = [_PIPELINE_PLACEMENT.sub("", text) for text in texts]
    for pattern in FACT_PATTERNS:
        for text in texts:
            for match in pattern.finditer(text):
                for name, raw in match.groupdict().items():
                    if raw is None or name in found:
                        continue
                    value = _read(name, raw.strip())
                    if value is not None:
                        found[name] = value
    _derive(found)
    return found


def message_bytes(text: str) -> int | None:
    """Bytes in a size as frameworks print it: ``1.53GiB``, ``3.80G``, ``6291456 bytes``.

    TensorFlow writes ``G`` for GiB, so single letters are binary too.
    """
    match = re.fullmatch(
        r"(\d{1,3}(?:[.,\u00a0 ]\d{3})+|\d+(?:[.,]\d+)?)\s*([KMGT]?)(?:i?B|bytes)?",
        text.strip(),
        re.IGNORECASE,
    )
    if match is None:
        return None
    number, unit = match.group(1), match.group(2).lower()
    size = _locale_number(number, whole=not unit) * _BINARY_UNITS[unit]
    return int(size) if math.isfinite(size) else None  # 16 kB of digits is no size


def _locale_number(text: str, whole: bool) -> float:
    """``2,14`` and ``2.14`` are 2.14; ``1.234.567`` and ``1 234 567`` are 1234567.

    Separators before groups of exactly three digits group thousands: repeated, after a space,
    or once in a count of bytes, which is ``whole`` (``1,024 bytes`` is 1024). Otherwise a comma
    is the decimal point of a German or French locale."""
    grouped = re.fullmatch(r"\d{1,3}(?:([.,\u00a0 ])\d{3})(?:\1\d{3})*", text)
    if grouped and (whole or text.count(grouped.group(1)) > 1 or grouped.group(1) in "\u00a0 "):
        return float(re.sub(r"\D", "", text))
    return float(text.replace(",", "."))


def tensor_bytes(shape: tuple[int, ...], dtype: str) -> int | None:
    """Bytes of a dense tensor, ``None`` for a dtype whose size is not known here."""
    size = DTYPE_BYTES.get(dtype.lower())
    return None if size is None else math.prod(shape) * size


def _read(name: str, raw: str) -> FactValue | None:
    if name.endswith("_bytes"):
        return message_bytes(raw)
    if name == "shape":
        return tuple(int(part) for part in raw.split(",") if part.strip())
    if name == "device":
        return _device(raw)
    if name == "op" and _GENERIC_OPS.match(raw):
        return None  # keep looking for the node that really asked for the memory
    if name in ("label", "expected_ndim", "found_ndim"):
        return int(raw)
    if name == "code" and raw.upper().removeprefix("0X").startswith("887A"):
        return _hresult(raw)
    return raw


#: DXGI's HRESULTs, as DirectML reports them (winerror.h).
_DXGI_ERRORS = {
    "887A0001": "DXGI_ERROR_INVALID_CALL",
    "887A0005": "DXGI_ERROR_DEVICE_REMOVED",
    "887A0006": "DXGI_ERROR_DEVICE_HUNG",
    "887A0007": "DXGI_ERROR_DEVICE_RESET",
    "887A0020": "DXGI_ERROR_DRIVER_INTERNAL_ERROR",
}


def _device(raw: str) -> str:
    """``GPU:0`` from TensorFlow's ``GPU:0``, PyTorch's ``0``, an allocator's ``GPU_0``, ``cpu``."""
    if raw.isdigit():
        return f"GPU:{raw}"
    if raw.lower() in ("cpu", "bfc_cpu"):
        return "CPU:0"
    return raw.replace("_", ":", 1) if re.fullmatch(r"(?:GPU|CPU)_\d+", raw) else raw


def _hresult(raw: str) -> str:
    code = raw.upper().removeprefix("0X")
    name = _DXGI_ERRORS.get(code)
    return f"0x{code} ({name})" if name else f"0x{code}"


def _derive(facts: dict[str, FactValue]) -> None:
    """Facts computed from others: bytes from shape and dtype, the layer from the node's path."""
    shape, dtype = facts.get("shape"), facts.get("dtype")
    if "requested_bytes" not in facts and isinstance(shape, tuple) and isinstance(dtype, str):
        requested = tensor_bytes(shape, dtype)
        if requested is not None:
            facts["requested_bytes"] = requested
    op = facts.get("op")
    if isinstance(op, str) and "layer" not in facts:
        scopes = [part for part in op.split("/") if not _GENERIC_OPS.match(part)]
        if len(scopes) >= 3:
            facts["layer"] = scopes[1]  # model/layer/.../Op: Keras names the scopes so


#: How the card names each fact, in the order it lists them.
FACT_LABELS = {
    "shape": "tensor shape",
    "dtype": "dtype",
    "requested_bytes": "allocation that failed",
    "device": "device",
    "allocator": "allocator",
    "op": "op",
    "layer": "layer",
    "total_bytes": "device capacity",
    "free_bytes": "free",
    "allocated_bytes": "allocated by the framework",
    "reserved_bytes": "reserved by the framework",
    "code": "error code",
    "api_call": "reported by",
    "xid": "Xid",
    "xid_name": "Xid meaning",
    "xid_action": "NVIDIA's catalog advises",
    "library": "library",
    "found_version": "version found",
    "expected_version": "version expected",
    "shapes": "shapes",
    "labels_shape": "labels' shape",
    "output_shape": "output's shape",
    "found_dtype": "dtype given",
    "expected_dtype": "dtype expected",
    "label": "value",
    "valid_range": "valid range",
    "first_shape": "first element's shape",
    "other_shape": "other element's shape",
    "expected_ndim": "dimensions expected",
    "found_ndim": "dimensions given",
    "input_types": "input given",
    "input_values": "values in the tensor",
    "requested_values": "values the shape needs",
    "feature": "feature",
    "fit_fraction": "batch that would fit (estimate)",
}


def fact_text(facts: Mapping[str, FactValue], name: str) -> str:
    """A fact as the card writes it: bytes in binary units, shapes as ``[32, 1024]``."""
    value = facts[name]
    if name.endswith("_bytes") and isinstance(value, int):
        return format_bytes(value)
    if name == "fit_fraction" and isinstance(value, float):
        if value < 0.005:  # never an estimate that rounds to 0%
            return "under 1% of the current batch"
        return f"about {value:.0%} of the current batch"
    if isinstance(value, tuple):
        return "[" + ", ".join(map(str, value)) + "]"
    return str(value)


def fill(template: str, facts: Mapping[str, FactValue]) -> str:
    """Fill ``{fact}`` fields; a ``<<...>>`` part is left out when a fact it names is unknown.

    ``"ran out of memory<< on {device}>>."`` reads "ran out of memory on GPU:0." or "ran out of
    memory." so that a sentence never shows a placeholder or ``None``.
    """

    def part(match: re.Match[str]) -> str:
        names = re.findall(r"\{(\w+)\}", match.group(1))
        return match.group(1) if all(name in facts for name in names) else ""

    text = re.sub(r"<<(.*?)>>", part, template, flags=re.DOTALL)
    return re.sub(
        r"\{(\w+)\}",
        lambda match: fact_text(facts, match.group(1)) if match.group(1) in facts else "",
        text,
    )
