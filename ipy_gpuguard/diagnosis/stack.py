"""Which framework raised an error and on which vendor's GPU: the one place that decides it.

A card whose first remedy is for another framework teaches the person to skip cards, so every
remedy and summary is chosen for the stack decided here. The error's own words decide first:
the module of its type, the framework files of its traceback, the libraries and devices it
names. What the guard saw of the cell (the frameworks imported, the devices it watched) fills
in only what the words leave open. Nothing named: advice that names no framework.

The doctor decides the stack of the machine with :func:`stack_of_modules` and the same
:class:`Stack`, so it and the cards never disagree about what a framework is called.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum


class Framework(str, Enum):
    """A framework a person trains with; Keras 2 (``tf.keras``) counts as TensorFlow's."""

    TENSORFLOW = "tensorflow"
    KERAS = "keras"
    PYTORCH = "pytorch"
    JAX = "jax"
    MLX = "mlx"

    @property
    def display_name(self) -> str:
        return _DISPLAY_NAMES[self]


class Vendor(str, Enum):
    """Whose GPU, and so whose tools (``nvidia-smi``, ``rocm-smi``) and settings apply."""

    NVIDIA = "nvidia"
    AMD = "amd"
    APPLE = "apple"
    DIRECTML = "directml"


_DISPLAY_NAMES = {
    Framework.TENSORFLOW: "TensorFlow",
    Framework.KERAS: "Keras",
    Framework.PYTORCH: "PyTorch",
    Framework.JAX: "JAX",
    Framework.MLX: "MLX",
}

#: Top-level modules of each framework (and of the libraries that run on one alone).
MODULES: dict[str, Framework] = {
    "tensorflow": Framework.TENSORFLOW,
    "tensorflow_directml": Framework.TENSORFLOW,
    "tf_keras": Framework.TENSORFLOW,
    "keras": Framework.KERAS,
    "torch": Framework.PYTORCH,
    "torch_directml": Framework.PYTORCH,
    "torchvision": Framework.PYTORCH,
    "lightning": Framework.PYTORCH,
    "pytorch_lightning": Framework.PYTORCH,
    "jax": Framework.JAX,
    "jaxlib": Framework.JAX,
    "flax": Framework.JAX,
    "optax": Framework.JAX,
    "mlx": Framework.MLX,
}

_MODULE_ALTERNATION = "|".join(sorted(MODULES, key=len, reverse=True))
#: A framework's file in a traceback (``site-packages/torch/nn/modules/module.py``), its
#: native library or source; not Lua Torch's ``torch/install/share/lua`` nor the copy of
#: TensorFlow's tree that old jaxlib logs name (``external/org_tensorflow/tensorflow/``).
_FRAMEWORK_FILE = re.compile(
    rf"(?<!org_tensorflow)[/\\](?P<module>{_MODULE_ALTERNATION})[/\\][^\s\"':]*?"
    r"\.(?:py|pyi|so|pyd|dll|dylib|cc|cpp|h)\b"
)
#: A framework's qualified name in text (``torch.cuda.OutOfMemoryError``, ``jax.jit``).
_QUALIFIED = re.compile(rf"(?<![\w.])(?P<module>{_MODULE_ALTERNATION})\.[A-Za-z_]")

#: What a framework's messages and logs call it, beside its modules.
_FRAMEWORK_WORDS: tuple[tuple[Framework, re.Pattern[str]], ...] = tuple(
    (framework, re.compile(pattern))
    for framework, pattern in (
        (Framework.PYTORCH, r"\bPyTorch\b|\bPYTORCH_\w+|\bc10(?:d|_cuda)?::|\blibtorch|\bc10\.dll"),
        (
            Framework.TENSORFLOW,
            r"\bTensorFlow\b|(?<!org_tensorflow/)\btensorflow/(?:core|compiler|python|stream_executor)"
            r"|/job:\w+/replica:\d+|\bTF_(?!CPP_)[A-Z_]{4,}|\btfdml_plugin"
            r"|\b(?:ResourceExhausted|InvalidArgument|FailedPrecondition)Error\b",
        ),
        (Framework.KERAS, r"\bKeras\b"),
        (
            Framework.JAX,
            r"\bJAX\b|\bjaxlib\b|\bXlaRuntimeError\b|\bXLA_PYTHON_CLIENT_\w+|\bjax_\w+|\bPJRT\b"
            r"|\borg_tensorflow/tensorflow/compiler/xla/python\b",
        ),
        (Framework.MLX, r"\bMLX\b|\[METAL\]|\bmlx::core\b|\blibmlx"),
    )
)

#: What names a vendor's GPU or its software, strongest first: ROCm's PyTorch still says
#: "CUDA out of memory", DirectML's TensorFlow runs ops named ``CudnnRNN``, and code pasted
#: beside an Apple error often tries ``cuda`` first; NVIDIA's words decide only alone.
_VENDOR_WORDS: tuple[tuple[Vendor, re.Pattern[str]], ...] = tuple(
    (vendor, re.compile(pattern))
    for vendor, pattern in (
        (
            Vendor.DIRECTML,
            r"(?i:DirectML)|\bDML\b|device:DML|\bDml\w+|torch_directml|privateuseone"
            r"|GPU device instance has been susp|not enough GPU video memory available"
            r"|DXGI_ERROR|(?i:d3d12)|\bdxgi\b|tfdml|\b(?:0x)?887[aA]000[1-7]\b|\bdml_\w+|[/\\]dml[/\\]",
        ),
        (
            Vendor.AMD,
            r"\bROCm\b|/rocm|\brocm[-_]?(?:smi|info|\d)|\+rocm|\bHIP\b|\bhip[A-Z]\w+|\bHIP_\w+|\bHSA_\w+|\bhsa_\w+|\bgfx\d{3,4}\w?\b"
            r"|\bamdgpu\b|\bRadeon\b|\bAMD Instinct\b|\bMI\d{2,3}X?\b|\brocblas|\bMIOpen|\blibamdhip"
            r"|\bGPU node-\d+",
        ),
        (
            Vendor.APPLE,
            r"\bMPS(?:Graph|NDArray|Kernel|Temporary)?\b(?! \(Multi-Process)|\bmps(?::\d)?\b"
            r"|\bMetal\b|\[METAL\]|\bMTL\w+|\bkIO(?:GPU|Accel)\w+|\bIOAF\b|\bApple (?:M\d|silicon)"
            r"|tensorflow[-_]metal|libmetal_plugin|\bAGX\w*|\bvalidate\w+Arguments:\d+: failed assertion",
        ),
        (
            Vendor.NVIDIA,
            r"\bCUDA|\bcuda|\bcu(?:DNN|dnn|BLAS|blas)|\bCU(?:DNN|BLAS)_|\bNCCL\b|\bNVIDIA\b|\bnvidia"
            r"|\bXid\b|\bGeForce\b|\bRTX\b|\bTesla\b|\bptxas\b|\bnvcc\b|\b[AHBLV]100\b|\bH200\b",
        ),
    )
)


@dataclass(frozen=True)
class Stack:
    """The frameworks in play, the one that raised the error, and the GPU's vendor.

    ``frameworks`` empty means unknown: remedies that name no framework. ``raised_by`` names
    the summary; Keras 3 on PyTorch has both in ``frameworks`` and PyTorch raised.
    """

    frameworks: frozenset[Framework] = frozenset()
    raised_by: Framework | None = None
    vendor: Vendor | None = None

    @property
    def framework_name(self) -> str | None:
        """The framework the card speaks of: the one that raised, or the only one in play."""
        if self.raised_by is not None:
            return self.raised_by.display_name
        if len(self.frameworks) == 1:
            return next(iter(self.frameworks)).display_name
        return None

    def in_order(self) -> tuple[Framework, ...]:
        """The frameworks whose spelling of a remedy a card prefers: Keras's where the person
        writes Keras (on any backend), then the one that raised, then the others."""
        first = [Framework.KERAS] if Framework.KERAS in self.frameworks else []
        if self.raised_by is not None and self.raised_by not in first:
            first.append(self.raised_by)
        rest = sorted(self.frameworks - set(first), key=list(Framework).index)
        return (*first, *rest)

    def raised_in(self, line: str) -> Stack:
        """This stack, with the framework that the failure's own line names as the one that
        raised ("... but JAX was built against" in a log that TensorFlow shares)."""
        named = stack_of_text((line,)).raised_by
        if named is None or named is self.raised_by:
            return self
        return Stack(self.frameworks | {named}, named, self.vendor)

    def filled_in(self, frameworks: Iterable[Framework], vendor: Vendor | None) -> Stack:
        """This stack, with what the guard saw of the cell where the words were silent."""
        known = self.frameworks or frozenset(frameworks)
        raised_by = self.raised_by
        if raised_by is None and len(known) == 1:
            raised_by = next(iter(known))
        return Stack(known, raised_by, self.vendor or vendor)


UNKNOWN = Stack()


def stack_of_text(
    texts: Iterable[str], type_names: Iterable[str] = (), files: Iterable[str] = ()
) -> Stack:
    """The stack an error names in its own words.

    Parameters
    ----------
    texts
        The error's messages and log lines (a pasted traceback includes its file lines).
    type_names
        Qualified names of the error's types, the raised one first: its module is the
        framework that raised it.
    files
        File names of a raised error's traceback, outermost first.
    """
    texts = tuple(texts)
    frameworks: set[Framework] = set()
    raised_by = next(
        (framework for name in type_names if (framework := _module_framework(name))), None
    )
    innermost: Framework | None = None
    for path in (*files, *texts):
        for match in _FRAMEWORK_FILE.finditer(path):
            innermost = MODULES[match.group("module")]
            frameworks.add(innermost)
    for text in texts:
        frameworks.update(MODULES[match.group("module")] for match in _QUALIFIED.finditer(text))
        frameworks.update(framework for framework, words in _FRAMEWORK_WORDS if words.search(text))
    if raised_by is None:
        raised_by = innermost
    if raised_by is not None:
        frameworks.add(raised_by)
    elif len(frameworks - {Framework.KERAS}) == 1:
        raised_by = next(iter(frameworks - {Framework.KERAS}))
    return Stack(frozenset(frameworks), raised_by, vendor_of_text(texts))


def vendor_of_text(texts: Iterable[str]) -> Vendor | None:
    """The vendor whose words the texts use, the strongest first (see ``_VENDOR_WORDS``)."""
    texts = tuple(texts)
    for vendor, words in _VENDOR_WORDS:
        if any(words.search(text) for text in texts):
            return vendor
    return None


def stack_of_modules(modules: Iterable[str], vendor: Vendor | None = None) -> Stack:
    """The stack of a process from the names of its imported modules (``sys.modules``)."""
    frameworks = frozenset(MODULES[name] for name in modules if name in MODULES)
    return UNKNOWN.filled_in(frameworks, vendor)


def _module_framework(qualified_name: str) -> Framework | None:
    return MODULES.get(qualified_name.split(".", 1)[0]) if "." in qualified_name else None
