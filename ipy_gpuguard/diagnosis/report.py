"""Read an error, raised or pasted, into the texts the rules look at.

An exception is read along its whole chain (``__cause__``, then ``__context__``), each link
with its message, its notes and the qualified names of its type and the type's bases, so
that ``tensorflow.python.framework.errors_impl.ResourceExhaustedError`` is recognised without
importing TensorFlow. Pasted text is split the same way: the framework's native log lines
(``W tensorflow/...`` and ``E0000 00:00:...`` lines) apart, and the rest into the links of the
chain at Python's "During handling of the above exception" separators.
"""

from __future__ import annotations

import builtins
import re
import traceback
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from .bounded import bounded_lines, bounded_text

#: A native log line: absl's ``E0000 00:00:1795319101.87 14910 file.cc:82] ...`` or TensorFlow's
#: older ``2021-10-13 17:19:29.385716: E tensorflow/...`` form.
_LOG_LINE = re.compile(
    r"^\s*(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+:\s+)?[IWEF](?:\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+\s+|\s+)"
    r"[\w./\\:-]+\.(?:cc|cpp|h|c):\d+\]"
)
#: What launchers and loggers put before each line of a report: mpirun's ``[1,0]<stderr>:``
#: (after a timestamp), torchrun's ``[rank0]:``, Ray's
#: ``(Actor pid=12)``, a quoted reply's ``>``, pytest's ``E``, journald's date, host and unit.
_LINE_PREFIX = re.compile(
    r"^(?:\S+Z: )?\[\d+,\d+\]<std(?:out|err)>:"
    r"|^(?:\[\d+\] )?\[(?:rank|default)\d+\]:[ ]?"
    r"|^\((?:\w+ )?pid=\d+(?:, ip=[\d.]+)?\)[ ]"
    r"|^>[ ]?"
    r"|^E[ ]{3}"
    r"|^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ [\w.@-]+\[\d+\]: ",
    re.MULTILINE,
)
_CHAIN_SEPARATOR = re.compile(
    r"^(?:During handling of the above exception, another exception occurred:"
    r"|The above exception was the direct cause of the following exception:)\s*$",
    re.MULTILINE,
)
#: ``module.TypeName: message`` or ``TypeName: message`` at the start of a line.
_TYPE_LINE = re.compile(
    r"^(?P<name>[A-Za-z_][\w.]*(?:Error|Exception|Exhausted|Interrupt|Exit|Warning))(?::|$)",
    re.MULTILINE,
)

#: Frameworks whose own errors make their native log lines worth reading.
FRAMEWORK_MODULES = ("tensorflow", "keras", "jax", "jaxlib", "torch", "tensorflow_directml")
_FRAMEWORK_PATH = re.compile(r"[/\\](?:" + "|".join(FRAMEWORK_MODULES) + r")[/\\]")


@dataclass(frozen=True)
class ErrorLink:
    """One exception of a chain: the qualified names along its type's MRO, and its text."""

    type_names: tuple[str, ...]
    text: str

    @property
    def type_name(self) -> str:
        return self.type_names[0] if self.type_names else ""


@dataclass(frozen=True)
class ErrorReport:
    """An error as the rules see it: the links of its chain, outermost first, and the log."""

    links: tuple[ErrorLink, ...]
    log_lines: tuple[str, ...] = ()
    source_lines: tuple[str, ...] = ()
    through_framework: bool = False
    #: A raised error's traceback files, outermost first (a pasted one has them in its text).
    frame_files: tuple[str, ...] = ()

    @property
    def raised_by_framework(self) -> bool:
        """Whether a framework raised it, passed it on, or (pasted) logged around it."""
        names = [name for link in self.links for name in link.type_names]
        if not names or self.through_framework:
            return True
        return any(
            name.split(".")[0] in FRAMEWORK_MODULES
            # pasted text often names the type unqualified: ResourceExhaustedError
            or ("." not in name and not hasattr(builtins, name))
            for name in names
        )

    @property
    def error_type(self) -> str:
        return self.links[0].type_name if self.links else ""


def report_from_exception(error: BaseException, log_lines: Iterable[str] = ()) -> ErrorReport:
    """Read ``error`` and its chain; the frames are read only for their source lines."""
    chain = list(exception_chain(error))
    frames = [frame for link in chain for frame in _frames(link)]
    return ErrorReport(
        tuple(_link(link) for link in chain),
        tuple(bounded_lines(log_lines)),
        tuple(bounded_lines(frame.line for frame in frames if frame.line)),
        any(_FRAMEWORK_PATH.search(frame.filename) for frame in frames),
        tuple(frame.filename for frame in frames),
    )


def report_from_text(text: str, log_lines: Iterable[str] = ()) -> ErrorReport:
    """Read error text pasted from a notebook, a terminal or a log file.

    What people paste is often only the log (no exception line), a traceback cut before its
    last line, or lines prefixed by a launcher; without an exception, the whole text is the error.
    """
    lines = _LINE_PREFIX.sub("", bounded_text(text)).splitlines()
    native = [line for line in lines if _LOG_LINE.match(line)]
    rest = "\n".join(line for line in lines if not _LOG_LINE.match(line))
    parts = [part for part in _CHAIN_SEPARATOR.split(rest) if part.strip()]
    # Python prints the innermost exception first; the chain is read outermost first.
    links = tuple(_text_link(part) for part in reversed(parts))
    if not any(link.type_names for link in links):
        links = (ErrorLink((), "\n".join(lines)),)
    return ErrorReport(
        links,
        (*native, *bounded_lines(log_lines)),
        source_lines=tuple(rest.splitlines()),  # a pasted traceback's code lines are in it
        through_framework=bool(native) or bool(_FRAMEWORK_PATH.search(rest)),
    )


def qualified_names(error_type: type) -> tuple[str, ...]:
    """``module.QualName`` of the type and each of its bases, ``object`` left out."""
    return tuple(
        _qualified(klass) if klass.__module__ != "builtins" else klass.__qualname__
        for klass in error_type.__mro__
        if klass is not object
    )


def _qualified(klass: type) -> str:
    return f"{klass.__module__}.{klass.__qualname__}"


def exception_chain(error: BaseException, suppressed_too: bool = False) -> Iterator[BaseException]:
    """``error``, then its cause or context, and so on, as Python prints them.

    ``suppressed_too`` also follows a context hidden by ``raise ... from None``: it is not
    printed, but its frames still hold memory.
    """
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        hidden = current.__suppress_context__ and not suppressed_too
        current = current.__cause__ or (None if hidden else current.__context__)


def _link(error: BaseException) -> ErrorLink:
    notes = getattr(error, "__notes__", None) or []
    message = _message(error)
    text = "\n".join([message, *map(str, notes)])
    return ErrorLink(qualified_names(type(error)), bounded_text(text))


def _message(error: BaseException) -> str:
    try:
        return str(error)
    except Exception:  # an exception whose __str__ fails still has a type
        return ""


def _text_link(part: str) -> ErrorLink:
    names = [match.group("name") for match in _TYPE_LINE.finditer(part)]
    # The type printed last is the one raised; a traceback's earlier lines are frames.
    return ErrorLink(tuple(reversed(names))[:1], part)


def _frames(error: BaseException) -> list[traceback.FrameSummary]:
    """The traceback's frames: their code lines and files, for rules about the failing call."""
    try:
        return list(traceback.extract_tb(error.__traceback__))
    except Exception:
        return []
