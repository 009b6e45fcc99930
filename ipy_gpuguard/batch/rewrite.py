"""A cell with another batch size: only the number's characters change, the rest byte for byte."""

from __future__ import annotations

from dataclasses import dataclass

from .find import BatchFinding, BatchTarget, Literal
from .source import CellSource


@dataclass(frozen=True)
class LineChange:
    """One changed line of the cell, for the card's one-line diff (1-based line)."""

    line: int
    before: str
    after: str

    @property
    def text(self) -> str:
        """``line 4: BATCH = 256 → BATCH = 64``."""
        return f"line {self.line}: {self.before.strip()} → {self.after.strip()}"


@dataclass(frozen=True)
class Rewrite:
    """The cell to run, and the variables of earlier cells to set before running it."""

    source: str
    namespace: dict[str, int]
    changes: tuple[LineChange, ...]


def rewrite(
    cell: str, target: BatchTarget, size: int, accumulation: tuple[Literal, int] | None = None
) -> Rewrite:
    """``cell`` with the batch size ``size`` (and the accumulation steps, when given)."""
    if size < 1:
        raise ValueError(f"a batch size is a positive number, not {size}")
    edits: list[tuple[Literal, int]] = []
    namespace: dict[str, int] = {}
    if target.literal is not None:
        edits.append((target.literal, size))
    else:
        assert target.name is not None
        namespace[target.name] = size
    if accumulation is not None:
        edits.append(accumulation)
    source = CellSource(cell)
    text = cell
    for literal, value in sorted(edits, key=lambda edit: edit[0].start, reverse=True):
        text = text[: literal.start] + str(value) + text[literal.end :]
    after = CellSource(text)
    lines = sorted({literal.line for literal, _ in edits})
    changes = tuple(
        LineChange(line, source.line_text(line), after.line_text(line)) for line in lines
    )
    return Rewrite(text, namespace, changes)


def without_batch_size(cell: str, finding: BatchFinding) -> str:
    """The cell with its batch literal blanked: the same cell, whatever size it was last run with."""
    target = finding.target
    if target is None or target.literal is None:
        return cell
    return cell[: target.literal.start] + "…" + cell[target.literal.end :]
