"""The values diagnosis hands to the rest of the guard: small, frozen, free of exceptions.

A :class:`Diagnosis` keeps the facts extracted from an error, never the error itself: an
exception holds its traceback, the traceback holds frames, and the frames hold the tensors whose
memory the person wants back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

from .stack import Framework, Vendor

#: A fact's value: bytes and counts are ``int``, shapes are tuples, the rest is text.
FactValue = str | int | float | tuple[int, ...]


class Kind(str, Enum):
    """What kind of failure a rule recognises; the card's colour and wording follow from it."""

    OUT_OF_MEMORY = "oom"
    HANG = "hang"
    FAULT = "fault"
    MISMATCH = "mismatch"
    NO_GPU = "no_gpu"
    DATA = "data"
    UNKNOWN = "unknown"

    @property
    def is_gpu_failure(self) -> bool:
        """Whether the GPU or its software stack failed (a data error is the person's input)."""
        return self not in (Kind.DATA, Kind.UNKNOWN)


@dataclass(frozen=True)
class Remedy:
    """One thing to try, from the catalog in :mod:`.remedies`.

    Parameters
    ----------
    action
        The id of the protocol's action that carries it out (``free_memory``, ``retry``);
        ``None`` for guidance only.
    steps
        What to do by hand, in order; facts of the diagnosis are filled in.
    note
        A caveat for this case, such as the kernel restart a setting needs.
    frameworks, vendors
        The stacks this spelling of the remedy is for; empty: it names no framework (or no
        vendor's tool) and fits any. A remedy id may have a spelling for each stack.
    """

    id: str
    title: str
    why: str
    steps: tuple[str, ...] = ()
    action: str | None = None
    links: tuple[tuple[str, str], ...] = ()
    note: str = ""
    frameworks: frozenset[Framework] = frozenset()
    vendors: frozenset[Vendor] = frozenset()


@dataclass(frozen=True)
class Diagnosis:
    """What went wrong, the facts that prove it, and what to do, most effective first.

    Parameters
    ----------
    rule_id
        The stable id of the rule that matched (``oom.tf.allocator``); ``unknown`` when none did.
    matched
        The line of the error (or of the framework's log) that the rule recognised.
    evidence
        Lines from outside the error that bear on it: peak memory against capacity, another
        process holding the GPU, the framework's memory settings.
    """

    rule_id: str
    kind: Kind
    title: str
    summary: str
    facts: Mapping[str, FactValue] = field(default_factory=dict)
    remedies: tuple[Remedy, ...] = ()
    evidence: tuple[str, ...] = ()
    matched: str = ""
    error_type: str = ""

    @property
    def is_gpu_failure(self) -> bool:
        return self.kind.is_gpu_failure
