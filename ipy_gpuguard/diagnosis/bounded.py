"""What diagnosis reads of an error: enough of it, and never so much that matching is slow.

A message can hold a 60 kB blob (a tensor printed in full, a base64 payload, a progress bar
without an end) or a megabyte of one repeated line. The rules need the lines around the error,
and those sit at the start of a text (the exception's line) and at its end (the last log
lines, the final exception): every line is cut to its head and tail, and a long text to its
first and last lines. Matching then costs time linear in what is kept, whatever came in.
"""

from __future__ import annotations

from collections.abc import Iterable

#: Characters kept of one line: the head and the tail, around a marker.
LINE_HEAD, LINE_TAIL = 600, 200
#: Characters kept of a whole text (or of a log): its first and its last lines, about this many.
TEXT_HEAD, TEXT_TAIL = 24_000, 24_000
CUT = " … "


def bounded_line(line: str) -> str:
    if len(line) <= LINE_HEAD + LINE_TAIL + len(CUT):
        return line
    return line[:LINE_HEAD] + CUT + line[-LINE_TAIL:]


def bounded_lines(lines: Iterable[str]) -> list[str]:
    """The lines, each cut, and only the first and last of them when there are many."""
    kept = [bounded_line(line) for line in lines]
    total = sum(len(line) + 1 for line in kept)
    if total <= TEXT_HEAD + TEXT_TAIL:
        return kept
    head, size = [], 0
    for line in kept:
        if size + len(line) > TEXT_HEAD:
            break
        head.append(line)
        size += len(line) + 1
    tail: list[str] = []
    size = 0
    for line in reversed(kept[len(head) :]):
        if size + len(line) > TEXT_TAIL:
            break
        tail.append(line)
        size += len(line) + 1
    return [*head, CUT.strip(), *reversed(tail)]


def bounded_text(text: str) -> str:
    """``text`` with each line cut and, when long, only its first and last lines.

    A long text is first cut to its first and last characters, so that splitting a megabyte
    of short lines costs nothing."""
    if len(text) <= LINE_HEAD + LINE_TAIL and "\n" not in text:
        return text
    if len(text) > 2 * (TEXT_HEAD + TEXT_TAIL):
        text = text[: 2 * TEXT_HEAD] + "\n" + text[-2 * TEXT_TAIL :]
    return "\n".join(bounded_lines(text.split("\n")))
