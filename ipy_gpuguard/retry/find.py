"""Where a cell sets its batch size, read from its syntax tree: nothing is executed.

A batch size reaches the framework as ``batch_size=`` in any call (``fit``, ``evaluate``,
``image_dataset_from_directory``, ``DataLoader``...), as the first argument of ``.batch(n)`` on a
``tf.data`` pipeline, or positionally in Keras' ``fit(x, y, 64)``. Its value is a literal there,
a name assigned a literal in the cell (``BATCH_SIZE = 64``), or a name from an earlier cell,
which a retry sets in the namespace instead.

When the cell has failed, the number to change is the one that reached the failing call in
that run: the call on a line the cell's frames were running (innermost first), else what flows
into it, else the one batch size that ran before it. Where the syntax cannot show it (a size
set in two branches and the run's values do not tell which ran, two sizes that both could have
run), the finding says so and names ``--batch-var``: a retry that changes the wrong number
reruns the failure and says it changed something.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from .flow import Scope, Statement, names_read, own_nodes
from .frames import CellFrame
from .resolve import (
    BatchTarget,
    Branches,
    Cannot,
    Found,
    Literal,
    literal_of,
    resolve,
    resolve_name,
)
from .source import CellSource

#: Methods whose first argument is a batch size (``tf.data.Dataset``).
BATCHING_METHODS = frozenset({"batch", "padded_batch", "ragged_batch"})
#: Keras methods taking the batch size positionally, and its index.
POSITIONAL_BATCH = {"fit": 2, "evaluate": 2, "predict": 1}
#: Names that look like a batch size when nothing shows where they go.
_BATCH_NAME = re.compile(r"(?i)batch|^bs$")
#: Keras 3 optimizers' argument that --keep-effective-batch multiplies.
ACCUMULATION_KEYWORD = "gradient_accumulation_steps"


@dataclass(frozen=True)
class BatchFinding:
    """The batch size of a cell, or why there is none to change (``reason``, a sentence).

    ``needs_the_run``: which number it is depends on what the cell's run did (a size set in
    two branches): a failure can tell, the cell's text alone cannot.
    """

    target: BatchTarget | None
    reason: str = ""
    choices: tuple[BatchTarget, ...] = ()
    accumulation: Literal | None = None
    needs_the_run: bool = False


@dataclass(frozen=True)
class _Use:
    """A batch size handed to a call: what sets it, the call's lines, where the call runs."""

    found: Found
    lines: range
    scope: Scope = field(compare=False)
    statement: Statement = field(compare=False)
    text: str = ""


def find_batch_size(
    cell: str, batch_var: str | None = None, failing: Sequence[CellFrame] = ()
) -> BatchFinding:
    """Find the one batch size a retry should change.

    Parameters
    ----------
    batch_var
        The variable the person named (``--batch-var``): it wins over everything found.
    failing
        The cell's frames when it failed, outermost first (:func:`.frames.cell_frames`):
        the batch size that reached the failing call. Empty: the cell has not failed.
    """
    return read_batch_sizes(cell, batch_var).at(tuple(failing))


@dataclass(frozen=True)
class BatchSizes:
    """Every batch size a cell hands to a call, in the cell's order, read once."""

    uses: tuple[_Use, ...]
    root: Scope | None = field(compare=False)
    source: CellSource
    named: Found | None = None
    unreadable: str = ""
    accumulation: Literal | None = None

    def at(self, failing: tuple[CellFrame, ...]) -> BatchFinding:
        """The batch size of the failing call (``failing``: the cell's frames), else the
        cell's first (nothing has failed yet)."""
        if self.root is None:
            return BatchFinding(None, self.unreadable)
        placed = [(frame, self._scope_of(frame)) for frame in failing]
        if self.named is not None:
            return self._finding(self.named, placed)
        if not failing:  # the cell's first size it can change, else why it has none
            readable = [use for use in self.uses if not isinstance(use.found, Cannot)]
            first = (readable or self.uses)[:1]
            return self._finding(first[0].found, placed) if first else self._otherwise()
        parameter = None
        for frame, scope in reversed(placed):
            on_line = [u for u in self.uses if u.scope is scope and frame.line in u.lines]
            if on_line:
                finding = self._finding(on_line[0].found, placed)
                if not isinstance(on_line[0].found, Cannot) or not on_line[0].found.parameter:
                    return finding
                parameter = parameter or finding  # set where the function is called: look out
        feeding = self._feeding(placed)
        if feeding:
            return self._finding(feeding[0].found, placed)
        return self._ran_before(placed) or parameter or self._otherwise(failing[0].line)

    def _finding(self, found: Found, placed: list[tuple[CellFrame, Scope | None]]) -> BatchFinding:
        if isinstance(found, Branches):
            frames = [frame for frame, scope in placed if scope is found.scope]
            if not frames:
                return BatchFinding(
                    None,
                    found.undecided().reason,
                    accumulation=self.accumulation,
                    needs_the_run=True,
                )
            decided = found.decide(frames[-1].integers.get(found.name))
            return self._finding(decided, placed)
        if isinstance(found, Cannot):
            return BatchFinding(None, found.reason, accumulation=self.accumulation)
        return BatchFinding(found, accumulation=self.accumulation)

    def _scope_of(self, frame: CellFrame) -> Scope | None:
        assert self.root is not None
        running = [
            scope for scope in self.root.walk() if scope.runs_as(frame.function, frame.first_line)
        ]
        return running[-1] if running else None

    def _feeding(self, placed: list[tuple[CellFrame, Scope | None]]) -> list[_Use]:
        """The uses whose value flows into the statements the cell's frames were running: the
        assignments of the names they read, and of the names those read, and so on."""
        by_statement: dict[int, list[_Use]] = {}
        for use in self.uses:
            by_statement.setdefault(id(use.statement), []).append(use)
        top = placed[0][1].statement_at(placed[0][0].line) if placed[0][1] is not None else None
        todo = [
            (scope, statement)
            for frame, scope in placed
            if scope is not None and (statement := scope.statement_at(frame.line)) is not None
        ]
        seen: set[int] = set()
        feeding: list[_Use] = []
        while todo:
            scope, statement = todo.pop()
            if id(statement) in seen:
                continue
            seen.add(id(statement))
            feeding.extend(by_statement.get(id(statement), ()))
            for name in names_read(statement.node):
                owner: Scope | None = scope
                before: Statement | None = statement
                while owner is not None and name not in owner.bindings:
                    owner, before = owner.parent, top
                if owner is None:
                    continue
                for binding in owner.reaching(name, before)[0]:
                    if not isinstance(binding.statement.node, _DEFINITIONS):
                        todo.append((owner, binding.statement))
        return sorted(set(feeding), key=lambda use: self.uses.index(use))

    def _ran_before(self, placed: list[tuple[CellFrame, Scope | None]]) -> BatchFinding | None:
        """The one batch size that may have run before the failure (none of the cell's top level
        after it); ``None`` when there is none, the reason when there are several."""
        frame, scope = placed[0]
        top = scope.statement_at(frame.line) if scope is not None else None
        ran = [
            use
            for use in self.uses
            if top is None or use.scope is not self.root or use.statement.order <= top.order
        ]
        distinct = list(dict.fromkeys(use.found for use in ran))
        if len(distinct) == 1:
            return self._finding(distinct[0], placed)
        if not distinct:
            return None
        named = "; ".join(f"line {use.lines.start}: {use.text}" for use in ran[:4])
        return BatchFinding(
            None,
            f"the guard cannot tell which batch size reached the failing line {frame.line} "
            f"({named}): name its variable with %%gpuguard --batch-var NAME",
            accumulation=self.accumulation,
        )

    def _otherwise(self, failing_line: int | None = None) -> BatchFinding:
        """The finding when no use reaches the failing call: one variable named like a batch
        size, or why there is none to change."""
        assert self.root is not None
        candidates = _batch_named_literals(self.root, self.source)
        accumulation = self.accumulation
        if len(candidates) == 1:
            return BatchFinding(candidates[0], accumulation=accumulation)
        if candidates:
            names = ", ".join(f"{c.name} (line {c.use_line})" for c in candidates)
            return BatchFinding(
                None,
                f"several variables could be the batch size ({names}) and none is passed as one: "
                "choose one, or name it with %%gpuguard --batch-var NAME",
                choices=tuple(candidates),
                accumulation=accumulation,
            )
        if self.uses and failing_line is not None:
            return BatchFinding(
                None,
                f"no batch size in this cell reaches the failing line {failing_line}: if it is "
                "set elsewhere, name its variable with %%gpuguard --batch-var NAME",
                accumulation=accumulation,
            )
        return BatchFinding(
            None,
            "no batch size in this cell: no batch_size= argument, no .batch(n), no BATCH_SIZE "
            "variable; if it is set elsewhere, name its variable with %%gpuguard --batch-var NAME",
            accumulation=accumulation,
        )


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@functools.lru_cache(maxsize=16)
def read_batch_sizes(cell: str, batch_var: str | None = None) -> BatchSizes:
    """Read the cell's syntax once: the guard asks when the cell starts (for its remembered
    size, and an --auto-retry cell's check) and again with its frames when it fails."""
    source = CellSource(cell)
    tree = source.parse()
    if isinstance(tree, str):
        return BatchSizes((), None, source, unreadable=tree)
    root = Scope(tree)
    accumulation = _accumulation(root, source)
    if batch_var is not None:
        named = resolve_name(root, batch_var, None, f"--batch-var {batch_var}", 0, source)
        return BatchSizes((), root, source, named, accumulation=accumulation)
    uses = sorted(_uses(root, source), key=lambda use: (use[0].lineno, use[0].col_offset))
    return BatchSizes(tuple(use for _, use in uses), root, source, accumulation=accumulation)


def _uses(root: Scope, source: CellSource) -> Iterator[tuple[ast.expr, _Use]]:
    """Every expression handed to a call as a batch size, in every scope, with what sets it."""
    for scope in root.walk():
        for statement in scope.statements:
            for node in own_nodes(statement.node):
                if not isinstance(node, ast.Call):
                    continue
                name = _call_name(node.func)
                lines = range(node.lineno, (node.end_lineno or node.lineno) + 1)
                for use, value in _batch_arguments(node, name):
                    found = resolve(value, use, lines.start, scope, statement, source)
                    text = ast.get_source_segment(source.python, value) or "…"
                    yield value, _Use(found, lines, scope, statement, use.replace("…", text))


def _batch_arguments(node: ast.Call, name: str) -> Iterator[tuple[str, ast.expr]]:
    for keyword in node.keywords:
        if keyword.arg == "batch_size":
            yield f"{name}(batch_size=…)", keyword.value
    method = node.func.attr if isinstance(node.func, ast.Attribute) else None
    if method in BATCHING_METHODS and node.args:
        yield f"{name}(…)", node.args[0]
    index = POSITIONAL_BATCH.get(method or "")
    if index is not None and len(node.args) > index:
        yield f"{name}(…)", node.args[index]


def _call_name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return f".{func.attr}"
    if isinstance(func, ast.Name):
        return func.id
    return "a call"


def _batch_named_literals(root: Scope, source: CellSource) -> list[BatchTarget]:
    """Variables of the cell named like a batch size and assigned a number, whatever uses them."""
    found = []
    for name, bindings in root.bindings.items():
        literal = literal_of(bindings[-1].value, source)
        if _BATCH_NAME.search(name) and literal is not None:
            found.append(BatchTarget(name, literal, f"{name} = {literal.value}", literal.line))
    return found


def _accumulation(root: Scope, source: CellSource) -> Literal | None:
    """The gradient-accumulation steps written in the cell, when they are a number."""
    for scope in root.walk():
        for statement in scope.statements:
            for node in own_nodes(statement.node):
                if isinstance(node, ast.Call):
                    for keyword in node.keywords:
                        if keyword.arg == ACCUMULATION_KEYWORD:
                            return literal_of(_last_value(root, keyword.value), source)
    return None


def _last_value(root: Scope, value: ast.expr) -> ast.expr | None:
    if isinstance(value, ast.Name) and value.id in root.bindings:
        return root.bindings[value.id][-1].value
    return value
