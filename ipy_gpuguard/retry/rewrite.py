"""A cell with another batch size: only the number's characters change, the rest byte for byte."""

from __future__ import annotations

from dataclasses import dataclass

from ..protocol import TextEdit
from .find import BatchFinding
from .resolve import BatchTarget, Literal
from .source import CellSource


@dataclass(frozen=True)
class Rewrite:
    """The cell to run, the variables of earlier cells to set before running it, and the edits
    that turn the original cell into it (what a frontend writes back into the notebook)."""

    source: str
    namespace: dict[str, int]
    edits: tuple[TextEdit, ...]


def rewrite(
    cell: str, target: BatchTarget, size: int, accumulation: tuple[Literal, int] | None = None
) -> Rewrite:
    """``cell`` with the batch size ``size`` (and the accumulation steps, when given)."""
    if size < 1:
        raise ValueError(f"a batch size is a positive number, not {size}")
    replacements: list[tuple[Literal, int]] = []
    namespace: dict[str, int] = {}
    if target.literal is not None:
        replacements.append((target.literal, size))
    else:
        assert target.name is not None
        namespace[target.name] = size
    if accumulation is not None:
        replacements.append(accumulation)
    source = CellSource(cell)
    edits = tuple(
        _edit(source, literal, value)
        for literal, value in sorted(replacements, key=lambda pair: pair[0].start)
    )
    text = cell
    for edit in reversed(edits):
        text = text[: edit.start] + edit.new_text + text[edit.end :]
    return Rewrite(text, namespace, edits)


def _edit(source: CellSource, literal: Literal, value: int) -> TextEdit:
    line_start = source.line_starts[literal.line - 1]
    return TextEdit(
        line=literal.line,
        column=literal.start - line_start,
        start=literal.start,
        end=literal.end,
        old_text=source.text[literal.start : literal.end],
        new_text=str(value),
        line_text=source.line_text(literal.line),
    )


def without_batch_size(cell: str, finding: BatchFinding) -> str:
    """The cell with its batch literal blanked: the same cell, whatever size it was last run with."""
    target = finding.target
    if target is None or target.literal is None:
        return cell
    return cell[: target.literal.start] + "…" + cell[target.literal.end :]
