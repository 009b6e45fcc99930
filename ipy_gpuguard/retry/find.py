"""Where a cell sets its batch size, read from its syntax tree: nothing is executed.

A batch size reaches the framework as ``batch_size=`` in any call (``fit``, ``evaluate``,
``image_dataset_from_directory``, ``DataLoader``...), as the first argument of ``.batch(n)`` on a
``tf.data`` pipeline, or positionally in Keras' ``fit(x, y, 64)``. Its value is a literal there,
a name assigned a literal in the cell (``BATCH_SIZE = 64``), or a name from an earlier cell,
which a retry sets in the namespace instead.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass

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
class BatchFinding:
    """The batch size of a cell, or why there is none to change (``reason``, a sentence)."""

    target: BatchTarget | None
    reason: str = ""
    choices: tuple[BatchTarget, ...] = ()
    accumulation: Literal | None = None


def find_batch_size(
    cell: str, batch_var: str | None = None, failing_line: int | None = None
) -> BatchFinding:
    """Find the one batch size a retry should change.

    Parameters
    ----------
    batch_var
        The variable the person named (``--batch-var``): it wins over everything found.
    failing_line
        The cell's line the error came from: among several batch sizes, the one used there.
    """
    return read_batch_sizes(cell, batch_var).at(failing_line)


@dataclass(frozen=True)
class BatchSizes:
    """Every batch size a cell hands to a call, with the lines of that call, in the cell's
    order; ``otherwise``: the finding when it hands none."""

    uses: tuple[tuple[BatchTarget, range], ...]
    otherwise: BatchFinding
    accumulation: Literal | None = None

    def at(self, failing_line: int | None) -> BatchFinding:
        """The batch size used on the failing line, else the cell's first."""
        if not self.uses:
            return self.otherwise
        at_failure = [target for target, lines in self.uses if failing_line in lines]
        target = at_failure[0] if at_failure else self.uses[0][0]
        return BatchFinding(target, accumulation=self.accumulation)


@functools.lru_cache(maxsize=16)
def read_batch_sizes(cell: str, batch_var: str | None = None) -> BatchSizes:
    """Read the cell's syntax once: the guard asks when the cell starts (for its remembered
    size, and an --auto-retry cell's check) and again with the failing line when it fails."""
    source = CellSource(cell)
    tree = source.parse()
    if isinstance(tree, str):
        return BatchSizes((), BatchFinding(None, tree))
    bindings = _Bindings(tree, source)
    accumulation = _accumulation(tree, source, bindings)
    if batch_var is not None:
        target = bindings.target(batch_var, f"--batch-var {batch_var}", None)
        if isinstance(target, str):
            return BatchSizes((), BatchFinding(None, target, accumulation=accumulation))
        return BatchSizes((), BatchFinding(target, accumulation=accumulation))
    found: dict[BatchTarget, range] = {}
    unreadable = []
    scopes: dict[ast.AST, _Bindings] = {tree: bindings}
    for use, lines, value, scope in _uses(tree):
        if scope not in scopes:
            scopes[scope] = _Bindings(scope, source, parent=bindings)
        target = _resolve(value, use, lines.start, scopes[scope], source)
        if isinstance(target, str):
            unreadable.append(target)
        else:
            found.setdefault(target, lines)
    if found:
        return BatchSizes(tuple(found.items()), BatchFinding(None), accumulation)
    return BatchSizes((), _none_handed(bindings, unreadable, accumulation))


def _none_handed(
    bindings: _Bindings, unreadable: list[str], accumulation: Literal | None
) -> BatchFinding:
    """The finding of a cell that hands no batch size to a call: one variable named like one,
    or why there is none to change."""
    candidates = bindings.batch_named_literals()
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
    if unreadable:
        return BatchFinding(None, str(unreadable[0]), accumulation=accumulation)
    return BatchFinding(
        None,
        "no batch size in this cell: no batch_size= argument, no .batch(n), no BATCH_SIZE "
        "variable; if it is set elsewhere, name its variable with %%gpuguard --batch-var NAME",
        accumulation=accumulation,
    )


def _uses(tree: ast.Module) -> list[tuple[str, range, ast.expr, ast.AST]]:
    """Every expression handed to a call as a batch size that can run: (call in words, its
    lines, expression, the scope it runs in: the cell or the function around it)."""
    uses = []
    for node, scope in _runnable(tree, tree):
        if not isinstance(node, ast.Call):
            continue
        name = _call_name(node.func)
        lines = range(node.lineno, (node.end_lineno or node.lineno) + 1)
        for keyword in node.keywords:
            if keyword.arg == "batch_size":
                uses.append((f"{name}(batch_size=…)", lines, keyword.value, scope))
        method = node.func.attr if isinstance(node.func, ast.Attribute) else None
        if method in BATCHING_METHODS and node.args:
            uses.append((f"{name}(…)", lines, node.args[0], scope))
        index = POSITIONAL_BATCH.get(method or "")
        if index is not None and len(node.args) > index:
            uses.append((f"{name}(…)", lines, node.args[index], scope))
    return sorted(uses, key=lambda use: (use[2].lineno, use[2].col_offset))


def _runnable(node: ast.AST, scope: ast.AST) -> Iterator[tuple[ast.AST, ast.AST]]:
    """Every node under ``node`` that can run, with its scope: a function's body is its own
    scope (the cell may call it); a branch that can never run (``if False:``) is left out."""
    for child in _flow_nodes(node):
        yield child, scope
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            yield from _runnable(child, child)


def _flow_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes under ``node`` in its own flow: not inside a function, a lambda or a class
    body (they run elsewhere, if at all), nor in a branch whose test is a constant false."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and isinstance(child.test, ast.Constant):
            for statement in child.body if child.test.value else child.orelse:
                yield statement
                yield from _flow_nodes(statement)
            continue
        yield child
        if not isinstance(
            child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef
        ):
            yield from _flow_nodes(child)


def _call_name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return f".{func.attr}"
    if isinstance(func, ast.Name):
        return func.id
    return "a call"


def _resolve(
    value: ast.expr, use: str, line: int, bindings: _Bindings, source: CellSource
) -> BatchTarget | str:
    literal = _literal(value, source)
    if literal is not None:
        return BatchTarget(None, literal, use, line)
    if isinstance(value, ast.Name):
        return bindings.target(value.id, use, line)
    text = ast.get_source_segment(source.python, value) or "an expression"
    return (
        f"the batch size in {use} on line {line} is {text}, an expression the guard cannot "
        "change: put it in a variable and name it with %%gpuguard --batch-var NAME"
    )


def _literal(value: ast.expr | None, source: CellSource) -> Literal | None:
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


class _Bindings:
    """The names a scope binds in its own flow (the cell's top level, or a function's body):
    to an integer literal, to another name, or otherwise. A name a function does not bind is
    the cell's (``parent``)."""

    def __init__(self, scope: ast.AST, source: CellSource, parent: _Bindings | None = None) -> None:
        self._source = source
        self._parent = parent
        self.assigned: dict[str, list[tuple[int, ast.expr | None]]] = {}
        arguments = (
            scope.args
            if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            else None
        )
        nodes = [*_flow_nodes(scope), *(ast.walk(arguments) if arguments else ())]
        for node in nodes:
            for name, value in _bound_names(node):
                self.assigned.setdefault(name, []).append((getattr(node, "lineno", 0), value))
        for bindings in self.assigned.values():
            bindings.sort(key=lambda binding: binding[0])

    def target(self, name: str, use: str, line: int | None, depth: int = 0) -> BatchTarget | str:
        """What sets ``name`` before ``line``: its literal, a name it copies, or the namespace."""
        bindings = self.assigned.get(name)
        if not bindings and self._parent is not None:
            return self._parent.target(name, use, line, depth)
        if not bindings:
            return BatchTarget(name, None, use, line or 0)
        before = [b for b in bindings if line is None or b[0] <= line] or bindings
        _, value = before[-1]
        literal = _literal(value, self._source)
        if literal is not None:
            return BatchTarget(name, literal, use, line or literal.line)
        if isinstance(value, ast.Name) and depth < 8:
            return self.target(value.id, use, line, depth + 1)
        return (
            f"{name}, the batch size in {use}, is not set to a number in this cell: set it like "
            f"{name} = 64, or name another variable with %%gpuguard --batch-var NAME"
        )

    def batch_named_literals(self) -> list[BatchTarget]:
        """Variables named like a batch size and assigned a number, whatever uses them."""
        found = []
        for name, bindings in self.assigned.items():
            literal = _literal(bindings[-1][1], self._source)
            if _BATCH_NAME.search(name) and literal is not None:
                found.append(BatchTarget(name, literal, f"{name} = {literal.value}", literal.line))
        return found

    def literal_of(self, value: ast.expr) -> Literal | None:
        if isinstance(value, ast.Name) and value.id in self.assigned:
            value = self.assigned[value.id][-1][1] or value
        return _literal(value, self._source)


def _bound_names(node: ast.AST) -> list[tuple[str, ast.expr | None]]:
    """Names bound by ``node``, with the value when it is a plain ``name = value``."""
    if isinstance(node, ast.Assign):
        plain = [(t.id, node.value) for t in node.targets if isinstance(t, ast.Name)]
        others = [t for t in node.targets if not isinstance(t, ast.Name)]
        return plain + [(n, None) for t in others for n in _names_in(t)]
    if isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target, ast.Name):
        value = node.value if isinstance(node, ast.AnnAssign) else None
        return [(node.target.id, value)]
    if isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
        return [(n, None) for n in _names_in(node.target)]
    if isinstance(node, ast.NamedExpr):
        return [(node.target.id, node.value)]
    if isinstance(node, ast.arg):
        return [(node.arg, None)]
    if isinstance(node, ast.Import | ast.ImportFrom):
        return [((a.asname or a.name).split(".")[0], None) for a in node.names]
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return [(n, None) for n in _names_in(node.optional_vars)]
    return []


def _names_in(target: ast.expr) -> list[str]:
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]


def _accumulation(tree: ast.Module, source: CellSource, bindings: _Bindings) -> Literal | None:
    """The gradient-accumulation steps written in the cell, when they are a number."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg == ACCUMULATION_KEYWORD:
                    return bindings.literal_of(keyword.value)
    return None
