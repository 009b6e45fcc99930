"""What a card's retry printed, as its lasting card keeps it: pure functions of stream outputs.

A notebook folds a stream as it arrives: ``\\r`` returns to the start of the line and what
follows overwrites it, ``\\b`` erases the character before it (Keras' progress bar is one line
rewritten with ``\\r``). The streams are kept folded, ANSI codes and all, as the lab extension
keeps them in a saved card's metadata; the card's HTML and text show them without the codes,
under a summary that says how many lines they are. The HTML's fold starts closed: while the
kernel lives, the same output shows under the card's buttons (its widget), and the fold is what
stays once that widget is gone (a restart, a reload, nbconvert).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from html import escape
from typing import Any

#: The key, under the card's MIME type in a display's metadata, of the streams its last action
#: printed (``action_output`` in the lab extension's ``actionoutput.ts``).
ACTION_OUTPUT_KEY = "action_output"

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


def fold_stream(text: str) -> str:
    """``text`` as a notebook shows it: each ``\\b`` erases the character before it on its line,
    then each ``\\r`` overwrites its line from the start (JupyterLab's order: Keras backspaces
    over its bar before the ``\\r``). Linear in the text: a long training's bar is redrawn
    thousands of times."""
    if "\b" in text:
        kept: list[str] = []
        for char in text:
            if char != "\b":
                kept.append(char)
            elif kept and kept[-1] != "\n":
                kept.pop()
        text = "".join(kept)
    lines = []
    for line in text.replace("\r\n", "\n").split("\n"):
        shown = ""
        for part in line.split("\r"):
            shown = part + shown[len(part) :]
        lines.append(shown)
    return "\n".join(lines)


def stream_outputs(chunks: Iterable[tuple[str, str]]) -> tuple[dict[str, str], ...]:
    """``(name, text)`` chunks in the order they were written, as a notebook's stream outputs:
    neighbours of one stream joined, each folded."""
    joined: list[list[str]] = []
    for name, text in chunks:
        if joined and joined[-1][0] == name:
            joined[-1][1] += text
        else:
            joined.append([name, text])
    return tuple(
        {"output_type": "stream", "name": name, "text": fold_stream(text)}
        for name, text in joined
        if text
    )


def line_count(outputs: tuple[dict[str, str], ...]) -> int:
    return sum(len(output["text"].removesuffix("\n").split("\n")) for output in outputs)


def summary(outputs: tuple[dict[str, str], ...]) -> str:
    lines = line_count(outputs)
    return f"Output ({'1 line' if lines == 1 else f'{lines} lines'})"


def output_html(outputs: tuple[dict[str, str], ...]) -> str:
    """The output as a closed fold under the card."""
    if not outputs:
        return ""
    streams = "".join(
        f'<pre style="margin:0;{"color:#c62828" if output["name"] == "stderr" else ""}">'
        f"{escape(_ANSI.sub('', output['text']))}</pre>"
        for output in outputs
    )
    return (
        f'<details class="ipy-gpuguard-output"><summary>{summary(outputs)}</summary>'
        f"{streams}</details>"
    )


def output_text(outputs: tuple[dict[str, str], ...]) -> str:
    if not outputs:
        return ""
    return f"{summary(outputs)}:\n" + "".join(_ANSI.sub("", output["text"]) for output in outputs)


def output_metadata(card_mime: str, outputs: tuple[dict[str, str], ...]) -> dict[str, Any]:
    """The display metadata that carries the streams, for the lab extension to render again."""
    return {card_mime: {ACTION_OUTPUT_KEY: list(outputs)}} if outputs else {}
