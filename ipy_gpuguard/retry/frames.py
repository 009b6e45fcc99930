"""Where in a cell a failure happened: the cell's own frames in its traceback, as facts.

The cell's top level is the first ``<module>`` frame; a function defined in the cell runs in a
frame of the same file. Each frame gives the line it was running and the integers its names
held: the run's own word on which branch set a batch size. Only those facts are kept, never a
frame (it would pin the failed run's tensors).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import FrameType, TracebackType

MODULE = "<module>"


@dataclass(frozen=True)
class CellFrame:
    """One frame of the cell's code as it failed.

    ``function`` and ``first_line`` name the code it ran (``<module>``: the cell's top level);
    ``integers``: the names that held an ``int`` there.
    """

    line: int
    function: str = MODULE
    first_line: int = 1
    integers: Mapping[str, int] = field(default_factory=dict, compare=False)


def cell_frames(error: BaseException) -> tuple[CellFrame, ...]:
    """The frames of the cell's own code in ``error``'s traceback, outermost first."""
    frames = []
    cell_file = None
    tb: TracebackType | None = error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if cell_file is None and code.co_name == MODULE:
            cell_file = code.co_filename
        if cell_file is not None and code.co_filename == cell_file:
            integers = _integers(tb.tb_frame)
            frames.append(CellFrame(tb.tb_lineno, code.co_name, code.co_firstlineno, integers))
        tb = tb.tb_next
    return tuple(frames)


def _integers(frame: FrameType) -> dict[str, int]:
    return {name: value for name, value in frame.f_locals.items() if type(value) is int}
