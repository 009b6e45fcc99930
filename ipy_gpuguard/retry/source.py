"""A cell's text as Python the ``ast`` module can parse, with every position still the cell's own.

A notebook cell is IPython syntax: ``%magics``, ``!shell``, ``x = !ls``, ``obj?``. Those lines are
masked, each by a line of the same indentation, so line numbers are unchanged; ``%time``,
``%timeit`` and ``%prun`` followed by Python keep that Python, their prefix replaced by an
``if 1:`` of the same width, so columns are unchanged too. Lines split exactly where Python's
tokenizer splits them (``\\n``, ``\\r\\n``, ``\\r``), which is not what ``str.splitlines`` does.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cached_property

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)?")
_ESCAPED = re.compile(r"^(?P<indent>[ \t]*)(?:%|!|[/,;](?=\w)|\?)")
_MAGIC_ASSIGNMENT = re.compile(r"^(?P<indent>[ \t]*)[\w.]+[ \t]*=[ \t]*[%!]")
_HELP = re.compile(r"^(?P<indent>[ \t]*)[\w.\[\]()'\"]+\?{1,2}[ \t]*$")
#: Line magics whose argument is a Python statement (without options).
_PYTHON_MAGIC = re.compile(r"^(?P<indent>[ \t]*)(?P<prefix>%(?:time|timeit|prun)[ \t]+)(?=[^\s-])")


@dataclass(frozen=True)
class CellSource:
    """One cell's text, split into lines the way Python splits them, and its parse."""

    text: str

    @cached_property
    def lines(self) -> tuple[str, ...]:
        """The lines with their endings; ``"".join(lines) == text``."""
        return tuple(match.group() for match in _LINE.finditer(self.text) if match.group())

    @cached_property
    def line_starts(self) -> tuple[int, ...]:
        """Character offset of each line's start (index 0 is line 1)."""
        starts, offset = [], 0
        for line in self.lines:
            starts.append(offset)
            offset += len(line)
        return tuple(starts)

    @cached_property
    def python(self) -> str:
        """The text with IPython's own syntax masked, line for line and column for column.

        Only a line that starts a logical line can be IPython syntax: ``% b`` inside brackets
        is Python's modulo, and a ``!`` in a triple-quoted string is text.
        """
        return self._masked[0]

    @cached_property
    def commands(self) -> frozenset[int]:
        """The lines that run a ``%magic`` or a ``!shell`` command (not ``obj?``, which only
        shows help, nor a ``%%magic`` line, the cell's own): they act when the cell runs, yet
        Python sees a ``pass`` there."""
        return self._masked[1]

    @cached_property
    def _masked(self) -> tuple[str, frozenset[int]]:
        masked, commands, scanner = [], set(), _LogicalLines()
        for number, line in enumerate(self.lines, start=1):
            body = line.rstrip("\r\n")
            ending = line[len(body) :]
            if scanner.continues_magic:
                scanner.continues_magic = body.endswith("\\")
                masked.append(ending)
                continue
            replaced, whole_line = _mask(body) if scanner.at_start else (body, False)
            masked.append(replaced + ending)
            if whole_line:
                scanner.continues_magic = body.endswith("\\")
                if _is_command(body):
                    commands.add(number)
            else:
                scanner.read(replaced)
        return "".join(masked), frozenset(commands)

    def parse(self) -> ast.Module | str:
        """The module's tree, or why the cell is not Python (a sentence)."""
        try:
            tree = compile(
                self.python,
                "<cell>",
                "exec",
                flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
                dont_inherit=True,
            )
        except (SyntaxError, ValueError) as error:
            where = f" (line {error.lineno})" if isinstance(error, SyntaxError) else ""
            return f"the cell is not Python the guard can read{where}: {error.args[0]}"
        assert isinstance(tree, ast.Module)
        return tree

    def offset(self, lineno: int, col_utf8: int) -> int:
        """The character offset of an ``ast`` position (1-based line, UTF-8 byte column)."""
        line = self.lines[lineno - 1]
        column = len(line.encode("utf-8")[:col_utf8].decode("utf-8"))
        return self.line_starts[lineno - 1] + column

    def line_text(self, lineno: int) -> str:
        return self.lines[lineno - 1].rstrip("\r\n")


def _is_command(body: str) -> bool:
    stripped = body.strip()
    return not stripped.startswith(("?", "%%")) and _HELP.match(body) is None


def _mask(body: str) -> tuple[str, bool]:
    """The line as Python, and whether the whole line was IPython syntax."""
    python_magic = _PYTHON_MAGIC.match(body)
    if python_magic:
        start = len(python_magic.group("indent"))
        width = len(python_magic.group("prefix"))
        return body[:start] + "if 1:".ljust(width) + body[start + width :], False
    for pattern in (_ESCAPED, _MAGIC_ASSIGNMENT, _HELP):
        match = pattern.match(body)
        if match:
            return match.group("indent") + "pass", True
    return body, False


class _LogicalLines:
    """Follows brackets, strings and backslashes to know whether a line starts a statement."""

    def __init__(self) -> None:
        self.depth = 0
        self.open_string: str | None = None  # the quotes of a triple-quoted string left open
        self.backslash = False
        self.continues_magic = False

    @property
    def at_start(self) -> bool:
        return self.depth == 0 and self.open_string is None and not self.backslash

    def read(self, body: str) -> None:
        index, quote = 0, self.open_string
        while index < len(body):
            if quote is not None:
                if body.startswith(quote, index):
                    index, quote = index + len(quote), None
                else:
                    index += 2 if body[index] == "\\" else 1
                continue
            char = body[index]
            if char == "#":
                break
            if char in "\"'":
                quote = char * 3 if body.startswith(char * 3, index) else char
                index += len(quote)
                continue
            if char in "([{":
                self.depth += 1
            elif char in ")]}":
                self.depth = max(self.depth - 1, 0)
            index += 1
        # A one-quote string cannot span lines: an unclosed one is a syntax error, left to parse.
        self.open_string = quote if quote is not None and len(quote) == 3 else None
        self.backslash = body.endswith("\\") and self.open_string is None
