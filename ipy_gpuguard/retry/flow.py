"""The flow of a cell's code, read from its syntax tree: the scope each statement runs in, the
branch it sits in, and which assignments of a name can reach it.

This is what lets the guard say which number reached a failing call: the value of ``BATCH`` in
``model.fit(batch_size=BATCH)`` comes from the last assignment before it that surely ran, or
from one of several branches (``if``/``else``, ``match``, ``try``/``except``, a loop's body), and
then only the run itself can tell which.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from typing import cast

#: The branches a statement sits in inside its scope: (the compound statement, which of its
#: blocks). An assignment surely ran before a statement when its block encloses the statement's.
Block = tuple[tuple[int, int], ...]
#: A place after every statement of a scope: what a function reads of the cell when called.
END = 1 << 30

_FUNCTION = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
#: ``try``, and ``try``/``except*`` where Python has it (3.11).
_TRY = tuple(getattr(ast, name) for name in ("Try", "TryStar") if hasattr(ast, name))
#: Fields that hold a compound statement's blocks rather than its own expressions.
_BLOCK_FIELDS = frozenset({"body", "orelse", "finalbody", "handlers", "cases"})


@dataclass(frozen=True)
class Statement:
    """A statement of a scope, its place in the scope's order and the branch it sits in."""

    node: ast.stmt
    order: int
    block: Block


@dataclass(frozen=True)
class Binding:
    """An assignment of a name: the statement that makes it and the value, when it is a plain
    ``name = value`` (``None`` for a loop variable, a parameter, an import...)."""

    name: str
    statement: Statement
    value: ast.expr | None
    parameter: bool = False


class Scope:
    """The cell's top level, or a function (or lambda) defined in it, with its own flow.

    A class body, and the functions in it, are left out: they run elsewhere, if at all. So is a
    branch whose test is a constant false (``if False:``).
    """

    def __init__(self, node: ast.AST, parent: Scope | None = None) -> None:
        self.node = node
        self.parent = parent
        self.statements: list[Statement] = []
        self.bindings: dict[str, list[Binding]] = {}
        self.children: list[Scope] = []
        self._by_id: dict[int, Statement] = {}
        if isinstance(node, _FUNCTION):
            arguments = node.args
            for argument in (
                *arguments.posonlyargs,
                *arguments.args,
                *arguments.kwonlyargs,
                *(a for a in (arguments.vararg, arguments.kwarg) if a is not None),
            ):
                entry = Statement(ast.Pass(lineno=node.lineno, col_offset=0), -1, ())
                self._bind(Binding(argument.arg, entry, None, parameter=True))
        for node_statement, block in _statements(_body(node), ()):
            statement = Statement(node_statement, len(self.statements), block)
            self.statements.append(statement)
            self._by_id[id(node_statement)] = statement
            for part in own_nodes(node_statement):
                for name, value in _bound_names(part):
                    self._bind(Binding(name, statement, value))
                if isinstance(part, _FUNCTION):
                    self.children.append(Scope(part, self))

    def _bind(self, binding: Binding) -> None:
        self.bindings.setdefault(binding.name, []).append(binding)

    def walk(self) -> Iterator[Scope]:
        """This scope and every scope defined in it."""
        yield self
        for child in self.children:
            yield from child.walk()

    def reaching(self, name: str, before: Statement | None) -> tuple[list[Binding], bool]:
        """The assignments of ``name`` in this scope that can be its value at ``before``
        (``None``: after the scope's last statement), latest first, and whether one of them
        surely ran (else the name may still hold what it held before)."""
        order = END if before is None else before.order
        block = () if before is None else before.block
        reaching: list[Binding] = []
        settled_after = None  # a compound statement that binds the name in every way through it
        for binding in reversed(self.bindings.get(name, ())):
            if binding.statement.order >= order:
                continue
            if settled_after is not None and binding.statement.order <= settled_after:
                return reaching, True
            reaching.append(binding)
            inside = binding.statement.block
            if block[: len(inside)] == inside:
                return reaching, True
            common = next(
                (i for i, step in enumerate(inside) if i >= len(block) or block[i] != step),
                len(inside),
            )
            compound = self._by_id[inside[common][0]]
            if settled_after is None and binds_surely([compound.node], name):
                settled_after = compound.order
        return reaching, settled_after is not None

    def statement_at(self, line: int) -> Statement | None:
        """The innermost statement of this scope running on ``line``."""
        found = None
        for statement in self.statements:
            node = statement.node
            if node.lineno <= line <= (node.end_lineno or node.lineno):
                found = statement
        return found

    def runs_as(self, function: str, first_line: int) -> bool:
        """Whether a frame of code named ``function`` starting on ``first_line`` runs this scope."""
        node = self.node
        if isinstance(node, ast.Module):
            return function == "<module>"
        if isinstance(node, ast.Lambda):
            return function == "<lambda>" and node.lineno == first_line
        assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        starts = [node.lineno, *(decorator.lineno for decorator in node.decorator_list)]
        return function == node.name and min(starts) == first_line


def binds_surely(statements: list[ast.stmt], name: str) -> bool:
    """Whether running ``statements`` to their end binds ``name`` whichever way it goes: both
    branches of an ``if``, the ``try`` and every handler, every case of a ``match`` that ends
    with one that always matches. A loop's body may run no time."""
    for statement in statements:
        if isinstance(statement, ast.If) and isinstance(statement.test, ast.Constant):
            taken = statement.body if statement.test.value else statement.orelse
            if binds_surely(taken, name):
                return True
        elif isinstance(statement, ast.If):
            if binds_surely(statement.body, name) and binds_surely(statement.orelse, name):
                return True
        elif isinstance(statement, _TRY):
            attempt = cast(ast.Try, statement)
            done = binds_surely(attempt.body, name) or binds_surely(attempt.orelse, name)
            handled = all(binds_surely(handler.body, name) for handler in attempt.handlers)
            if (done and handled) or binds_surely(attempt.finalbody, name):
                return True
        elif isinstance(statement, ast.Match):
            cases = statement.cases
            always = bool(cases) and _irrefutable(cases[-1])
            if always and all(binds_surely(case.body, name) for case in cases):
                return True
        elif isinstance(statement, ast.With | ast.AsyncWith):
            if binds_surely(statement.body, name):
                return True
        elif not isinstance(statement, ast.For | ast.AsyncFor | ast.While) and any(
            bound == name for part in own_nodes(statement) for bound, _ in _bound_names(part)
        ):
            return True
    return False


def _irrefutable(case: ast.match_case) -> bool:
    return (
        isinstance(case.pattern, ast.MatchAs)
        and case.pattern.pattern is None
        and case.guard is None
    )


def own_nodes(statement: ast.stmt) -> Iterator[ast.AST]:
    """The nodes a statement evaluates itself, in its scope: not its blocks (they are statements
    of their own), not a function's body or parameters, not a lambda's body (other scopes)."""
    yield statement  # an assignment, a loop, a definition: it binds its names here
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
        roots: list[ast.AST] = [
            *statement.decorator_list,
            *statement.args.defaults,
            *(d for d in statement.args.kw_defaults if d is not None),
        ]
    elif isinstance(statement, ast.ClassDef):
        roots = [*statement.decorator_list, *statement.bases, *statement.keywords]
    else:
        roots = [
            value
            for name, field in ast.iter_fields(statement)
            if name not in _BLOCK_FIELDS
            for value in (field if isinstance(field, list) else [field])
            if isinstance(value, ast.AST)
        ]
    for root in roots:
        yield from _expression_nodes(root)


def names_read(statement: ast.stmt) -> list[str]:
    """The names a statement reads itself, in the order they appear."""
    return [
        node.id
        for node in own_nodes(statement)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    ]


def _expression_nodes(root: ast.AST) -> Iterator[ast.AST]:
    yield root
    if isinstance(root, ast.Lambda):
        return  # its body runs when it is called, in its own scope
    for child in ast.iter_child_nodes(root):
        yield from _expression_nodes(child)


def _body(node: ast.AST) -> list[ast.stmt]:
    if isinstance(node, ast.Lambda):
        return [ast.copy_location(ast.Expr(node.body), node.body)]
    assert isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef)
    return node.body


def _statements(body: list[ast.stmt], block: Block) -> Iterator[tuple[ast.stmt, Block]]:
    """Each statement of a scope's flow, in order, with the branch it sits in."""
    for statement in body:
        yield statement, block
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        if isinstance(statement, ast.If) and isinstance(statement.test, ast.Constant):
            taken = statement.body if statement.test.value else statement.orelse
            yield from _statements(taken, block)
            continue
        for index, (inner, surely_runs) in enumerate(_blocks(statement)):
            branch = block if surely_runs else (*block, (id(statement), index))
            yield from _statements(inner, branch)


def _blocks(statement: ast.stmt) -> list[tuple[list[ast.stmt], bool]]:
    """A compound statement's blocks, and whether each runs whenever the statement does."""
    if isinstance(statement, ast.With | ast.AsyncWith):
        return [(statement.body, True)]
    if isinstance(statement, _TRY):
        attempt = cast(ast.Try, statement)  # ``try``/``except*`` has the same blocks
        handlers = [(handler.body, False) for handler in attempt.handlers]
        return [
            (attempt.body, False),
            *handlers,
            (attempt.orelse, False),
            (attempt.finalbody, True),
        ]
    if isinstance(statement, ast.Match):
        return [(case.body, False) for case in statement.cases]
    if isinstance(statement, ast.If | ast.For | ast.AsyncFor | ast.While):
        return [(statement.body, False), (statement.orelse, False)]
    return []


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
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [(node.name, None)]
    if isinstance(node, ast.Import | ast.ImportFrom):
        return [((a.asname or a.name).split(".")[0], None) for a in node.names]
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return [(n, None) for n in _names_in(node.optional_vars)]
    return []


def _names_in(target: ast.expr) -> list[str]:
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
