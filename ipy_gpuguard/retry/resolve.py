"""What sets a batch size handed to a call: a literal, a name the cell assigns (followed through
copies and through the branches that may have run), or a name of an earlier cell.

Read from the cell's flow (:mod:`.flow`); nothing is executed. Where several branches could set
it, :class:`Branches` keeps them all, and the failed run's values pick the one that ran.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .flow import Scope, Statement
from .source import CellSource


@dataclass(frozen=True)
class Literal:
    """An integer literal in the cell: where its characters are, and its value."""

    start: int
    end: int
    line: int
    value: int


@dataclass(frozen=True)
class BatchTarget:
    """What a retry changes to set the batch size.

    ``literal`` is the number to rewrite; without one, ``name`` is a variable of an earlier
    cell, which the retry sets in the namespace. ``use`` says where the size goes, in words.
    """

    name: str | None
    literal: Literal | None
    use: str
    use_line: int

    @property
    def label(self) -> str:
        return self.name if self.name is not None else f"the batch size in {self.use}"


@dataclass(frozen=True)
class Cannot:
    """Why a use's batch size is not a number the guard can change; ``parameter``: it is a
    function's parameter, set where the function is called."""

    reason: str
    parameter: bool = False


@dataclass(frozen=True)
class Branches:
    """A name set differently in several branches: which one reached the call depends on the
    run, whose values (the name's, in ``scope``) tell when exactly one candidate matches."""

    name: str
    scope: Scope = field(compare=False)
    candidates: tuple[BatchTarget | Cannot, ...]
    use: str
    line: int

    def decide(self, value: int | None) -> BatchTarget | Cannot:
        """The candidate the run's ``value`` of the name shows, or why none is shown."""
        matching = [c for c in self.candidates if value is not None and _may_be(c, value)]
        return matching[0] if len(matching) == 1 else self.undecided()

    def undecided(self) -> Cannot:
        lines = sorted(
            {c.literal.line for c in self.candidates if isinstance(c, BatchTarget) and c.literal}
        )
        where = f" (lines {', '.join(map(str, lines))})" if lines else ""
        return Cannot(
            f"{self.name}, the batch size in {self.use} on line {self.line}, is set in more than "
            f"one branch{where} and the guard cannot tell which one ran: set it once before "
            "the call, or name a variable set once with %%gpuguard --batch-var NAME"
        )


Found = BatchTarget | Cannot | Branches


def _may_be(candidate: BatchTarget | Cannot, value: int) -> bool:
    if isinstance(candidate, BatchTarget) and candidate.literal is not None:
        return candidate.literal.value == value
    return True  # a name of an earlier cell, or a value the guard cannot read: it may be


def resolve(
    value: ast.expr,
    use: str,
    line: int,
    scope: Scope,
    statement: Statement,
    source: CellSource,
) -> Found:
    literal = literal_of(value, source)
    if literal is not None:
        return BatchTarget(None, literal, use, line)
    if isinstance(value, ast.Name):
        return resolve_name(scope, value.id, statement, use, line, source)
    text = ast.get_source_segment(source.python, value) or "an expression"
    return Cannot(
        f"the batch size in {use} on line {line} is {text}, an expression the guard cannot "
        "change: put it in a variable and name it with %%gpuguard --batch-var NAME"
    )


def resolve_name(
    scope: Scope,
    name: str,
    before: Statement | None,
    use: str,
    line: int,
    source: CellSource,
    depth: int = 0,
) -> Found:
    """What sets ``name`` at ``before`` in ``scope``: a literal, a name it copies, the
    namespace (a name of an earlier cell), or several of those, one per branch."""
    owner: Scope | None = scope
    while owner is not None and name not in owner.bindings:
        owner, before = owner.parent, None
    if owner is None:
        return BatchTarget(name, None, use, line)
    bindings, surely = owner.reaching(name, before)
    candidates: list[BatchTarget | Cannot] = []
    for binding in bindings:
        found: Found
        literal = literal_of(binding.value, source)
        if literal is not None:
            found = BatchTarget(name, literal, use, line or literal.line)
        elif binding.parameter:
            found = Cannot(
                f"{name}, the batch size in {use}, is a parameter of the function: the guard "
                "changes it where the function is called with batch_size=N, or name a variable "
                "with %%gpuguard --batch-var NAME",
                parameter=True,
            )
        elif isinstance(binding.value, ast.Name) and depth < 8:
            found = resolve_name(
                owner, binding.value.id, binding.statement, use, line, source, depth + 1
            )
        else:
            found = Cannot(
                f"{name}, the batch size in {use}, is not set to a number in this cell: set it "
                f"like {name} = 64, or name another variable with %%gpuguard --batch-var NAME"
            )
        candidates.extend(found.candidates if isinstance(found, Branches) else (found,))
    if not surely and owner.parent is None:
        candidates.append(BatchTarget(name, None, use, line))  # it may hold an earlier cell's
    distinct = tuple(dict.fromkeys(candidates))
    if len(distinct) == 1:
        return distinct[0]
    if not distinct:  # assigned only after the call: an earlier cell's, or unbound
        return BatchTarget(name, None, use, line)
    return Branches(name, owner, distinct, use, line)


def literal_of(value: ast.expr | None, source: CellSource) -> Literal | None:
    if not (
        isinstance(value, ast.Constant)
        and type(value.value) is int
        and value.end_lineno == value.lineno
        and value.end_col_offset is not None
    ):
        return None
    start = source.offset(value.lineno, value.col_offset)
    end = source.offset(value.lineno, value.end_col_offset)
    return Literal(start, end, value.lineno, value.value)
