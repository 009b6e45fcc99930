"""What a retry runs again besides the training: a retry reruns the whole cell from its first
line, so the statements before the failing one that act on the world (a call whose result is
dropped, a write, an append, a ``with`` block) happen twice. The card names them before the
first retry, so that nobody learns it from a list that doubled or a file written twice. A
``%magic`` or ``!shell`` line at the top level runs again too (``!pip install``, ``%run``)."""

from __future__ import annotations

import ast

from .source import CellSource

#: Statements named at most; the rest are counted.
MAX_NAMED = 5
_WIDTH = 80


def rerun_statements(cell: str, failing_line: int | None) -> tuple[str, ...]:
    """``line N: code`` for each top-level statement before ``failing_line`` that acts by
    its effects; all of the cell's when the failing line is unknown."""
    source = CellSource(cell)
    tree = source.parse()
    if isinstance(tree, str):
        return ()
    acting = [
        statement
        for statement in tree.body
        if (failing_line is None or statement.lineno < failing_line)
        and (_acts(statement) or statement.lineno in source.commands)
    ]
    named = [_line(source, statement) for statement in acting[:MAX_NAMED]]
    more = len(acting) - MAX_NAMED
    return (*named, f"and {more} more") if more > 0 else tuple(named)


def _acts(statement: ast.stmt) -> bool:
    """A call kept for its effect, an in-place change, a ``with`` block or a deletion."""
    if isinstance(statement, ast.Expr):
        value = statement.value
        return isinstance(value, ast.Call | ast.Await) and not _is_display(value)
    return isinstance(statement, ast.AugAssign | ast.With | ast.AsyncWith | ast.Delete)


def _is_display(value: ast.expr) -> bool:
    """``print(...)`` and ``display(...)`` only show: running them again harms nothing."""
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and (value.func.id in ("print", "display"))
    )


def _line(source: CellSource, statement: ast.stmt) -> str:
    code = source.line_text(statement.lineno).strip()
    if len(code) > _WIDTH:
        code = code[: _WIDTH - 1] + "…"
    return f"line {statement.lineno}: {code}"
