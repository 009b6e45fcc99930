"""The batch size of a cell: find it, rewrite it, choose the next one, remember what worked.

Pure: no IPython, no widgets, no framework, and nothing here executes the cell.
"""

from .find import BatchFinding, BatchTarget, Literal, find_batch_size
from .memory import BatchMemory, Remembered, cell_key
from .rewrite import LineChange, Rewrite, rewrite, without_batch_size
from .search import BatchSearch, SearchSettings, Step, Trial

__all__ = [
    "BatchFinding",
    "BatchMemory",
    "BatchSearch",
    "BatchTarget",
    "LineChange",
    "Literal",
    "Remembered",
    "Rewrite",
    "SearchSettings",
    "Step",
    "Trial",
    "cell_key",
    "find_batch_size",
    "rewrite",
    "without_batch_size",
]
