"""The remediation card as data: what every renderer (widgets, HTML, text, the lab extension)
shows, and what a frontend needs to act on it without asking the kernel.

Values are in units named by their fields (``_bytes``, ``_s``); unknown is ``None``. Text that
comes from the error (messages, op names) is plain text here: each renderer escapes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .encode import SCHEMA_VERSION

#: The vendor MIME type of a card's JSON in a display bundle.
CARD_MIME = "application/vnd.ipy-gpuguard.card+json"
#: Marks the display of a card's widget buttons: a frontend that renders cards (the lab
#: extension, whose card carries its own buttons) shows nothing for it, whichever it prefers.
CONTROLS_MIME = "application/vnd.ipy-gpuguard.controls+json"
#: What the display of a card's buttons holds once they can no longer act: JupyterLab hides a
#: widget view without a model id, and nbconvert, finding no such model, shows the empty text.
HIDDEN_CONTROLS = {
    "application/vnd.jupyter.widget-view+json": {
        "version_major": 2,
        "version_minor": 0,
        "model_id": "",
    },
    "text/plain": "",
}

#: A fact's value: bytes and counts are integers, shapes lists of integers, the rest text.
FactData = str | int | float | tuple[int, ...]


@dataclass(frozen=True)
class Fact:
    """One fact the diagnosis read from the error, with its unit and its text as cards write it.

    ``unit`` is ``"bytes"``, ``"fraction"`` (0 to 1) or ``None`` (text, codes, shapes).
    """

    name: str
    label: str
    value: FactData
    unit: str | None
    text: str


@dataclass(frozen=True)
class Link:
    label: str
    url: str


@dataclass(frozen=True)
class CardRemedy:
    """A remedy of the catalog with the diagnosis' facts filled in.

    ``action`` is the id of the action that carries it out (see :mod:`.actions`), or ``None``
    when it is guidance to follow by hand.
    """

    id: str
    title: str
    why: str
    steps: tuple[str, ...]
    action: str | None
    note: str
    links: tuple[Link, ...]


@dataclass(frozen=True)
class DeviceSeries:
    """One device's memory over the failed run, for the card's chart (seconds since the start)."""

    index: int
    name: str
    total_bytes: int | None
    simulated: bool
    framework: str | None
    elapsed_s: tuple[float, ...]
    device_used_bytes: tuple[int | None, ...]
    allocator_bytes: tuple[int | None, ...]


@dataclass(frozen=True)
class Reclaim:
    """What freeing the failure's memory gave back; ``pending`` while it has not run yet."""

    pending: bool
    freed_bytes: int | None
    held_bytes: int | None
    frames_cleared: int


@dataclass(frozen=True)
class TextEdit:
    """One replacement in the cell's source: 1-based ``line``, 0-based ``column``, and the
    ``start``/``end`` offsets in the whole source, all counted in Unicode code points;
    ``line_text`` is the whole line before the edit, for a one-line diff."""

    line: int
    column: int
    start: int
    end: int
    old_text: str
    new_text: str
    line_text: str

    @property
    def new_line_text(self) -> str:
        """The line after the edit."""
        return (
            self.line_text[: self.column]
            + self.new_text
            + self.line_text[self.column + len(self.old_text) :]
        )


@dataclass(frozen=True)
class BatchEdit:
    """What to write into the notebook's cell so that it keeps ``batch_size``.

    A frontend applies ``edits`` to the cell whose id is ``cell_id`` only while the SHA-256 of
    its source (UTF-8) is still ``source_sha256``; otherwise the cell changed since it ran.
    """

    cell_id: str | None
    source_sha256: str
    batch_size: int
    edits: tuple[TextEdit, ...]


@dataclass(frozen=True)
class RetryTarget:
    """Where the batch size is set: a variable, a line of the cell, or an earlier cell's name."""

    variable: str | None
    use: str
    line: int | None
    line_text: str | None
    in_namespace: bool


@dataclass(frozen=True)
class RetryOffer:
    """The size a retry would try and what it changes; ``batch_size`` ``None``: no retry, and
    ``reason`` says why (``choices``: the variables the person could name with --batch-var).
    ``reruns``: the statements before the failing line that a retry runs again for their
    effects (calls, writes, appends), as ``line N: code``."""

    batch_size: int | None
    current_batch_size: int | None
    target: RetryTarget | None
    reason: str
    choices: tuple[str, ...]
    notes: tuple[str, ...]
    reruns: tuple[str, ...]


@dataclass(frozen=True)
class AttemptRecord:
    """One attempt of a retry: ``result`` is ``fits``, ``out_of_memory`` or ``failed``;
    ``probe``: a probe of a search (a few training steps, then undone), not a whole run."""

    batch_size: int
    result: str
    peak_bytes: int | None
    error: str | None
    probe: bool = False


@dataclass(frozen=True)
class RetryVerdict:
    """How the retries stand after the last attempt: the one decision every renderer shows.

    ``state`` is one of ``fixed`` (``batch_size`` fits, the search is over), ``next``
    (``batch_size`` is the next size to try), ``memory_held`` (``held_bytes`` did not come back:
    a retry here would fail again; ``batch_size`` is the size to run after a restart),
    ``gave_up`` (no size down to ``batch_size``, the floor, fits), ``other_error`` (the cell failed for
    another reason than memory) or ``stopped`` (the person's Stop ended the attempts; the model is
    as the whole run at ``batch_size`` left it, or with ``None`` as it was before the cell).
    """

    state: str
    batch_size: int | None
    held_bytes: int | None
    searched: bool
    remembered: bool
    notes: tuple[str, ...] = ()  # how the search went: whole runs and why, a generator used up


@dataclass(frozen=True)
class RetryState:
    """The retry part of an out-of-memory card: the offer, the attempts, where they stand."""

    offer: RetryOffer
    attempts: tuple[AttemptRecord, ...]
    verdict: RetryVerdict | None
    capacity_bytes: int | None
    running: bool


@dataclass(frozen=True)
class ActionOffer:
    """A button: the action it sends, its label, and why it is disabled when it is."""

    action: str
    label: str
    batch_size: int | None
    enabled: bool
    reason: str


@dataclass(frozen=True)
class AttemptWords:
    """One attempt as the card's table shows it: ``result`` and ``peak`` in words (an unknown
    peak says why it is unknown); ``line``, the attempt in one line, as a terminal prints it."""

    batch_size: int
    result: str
    peak: str
    line: str


@dataclass(frozen=True)
class CardWords:
    """Every sentence of the card beyond the diagnosis' own text, worded once by the kernel.

    Renderers print these and word nothing themselves. ``reclaim``: what freeing gave back
    (empty when nothing was freed); ``offer``: the retry's offer, or why there is none, and what
    runs again; ``attempts``: the attempts' table; ``verdict``: where the retries stand, the
    first line the headline; ``edit``: the change that would keep the size in the cell, worded
    as a proposal (empty when there is none).
    """

    reclaim: str
    offer: tuple[str, ...]
    attempts: tuple[AttemptWords, ...]
    verdict: tuple[str, ...]
    edit: str


#: A card with nothing to say beyond its diagnosis.
NO_WORDS = CardWords("", (), (), (), "")


@dataclass(frozen=True)
class Card:
    """One remediation card.

    ``id`` is also the card's display id, so that an action's result replaces the card where
    it is shown. ``cell_id`` and ``execution_count`` say which cell failed (``cell_id`` where
    the frontend sends one). ``batch_edit`` is the change that keeps the working (or offered)
    batch size in the cell; ``actions`` are the buttons a renderer shows; ``words`` every
    sentence beyond the diagnosis' own text.
    """

    id: str
    kind: str
    rule_id: str
    title: str
    summary: str
    error_type: str
    matched: str
    facts: tuple[Fact, ...]
    evidence: tuple[str, ...]
    remedies: tuple[CardRemedy, ...]
    notes: tuple[str, ...]
    chart: tuple[DeviceSeries, ...]
    reclaimed: Reclaim | None
    retry: RetryState | None
    batch_edit: BatchEdit | None
    actions: tuple[ActionOffer, ...]
    cell_id: str | None
    execution_count: int | None
    words: CardWords = NO_WORDS
    version: int = SCHEMA_VERSION
