"""A diagnosis, the finished run's record, the retry's state and what freeing gave back, as
the protocol's card: what it says and what the person may do."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..diagnosis import Diagnosis, Kind, Remedy
from ..diagnosis.facts import FACT_LABELS, fact_text
from ..protocol import (
    FREE_MEMORY,
    NO_WORDS,
    RETRY,
    ActionOffer,
    Card,
    CardRemedy,
    CardWords,
    DeviceSeries,
    Fact,
    Link,
    Reclaim,
    RetryState,
)
from ..record import PanelView, Reclaimed
from ..retry import FIXED, RetryRequest
from ..watchdog import HangEvidence, Stall
from .offers import batch_edit, retry_actions, retry_state
from .stall import (
    action_lines,
    ended_stall_lines,
    hang_lines,
    stall_facts,
    stall_title,
    where_lines,
)
from .words import (
    attempt_words,
    batch_remedy_steps,
    edit_text,
    offer_lines,
    reclaim_text,
    search_lines,
    verdict_lines,
)

#: What a card shows while the failure's memory is being freed, just after it appeared.
PENDING = Reclaim(pending=True, freed_bytes=None, held_bytes=None, frames_cleared=0)


@dataclass(frozen=True)
class CardParts:
    """What changes on a card after it is shown: freeing, the retries, a running action."""

    reclaimed: Reclaim | None = None
    request: RetryRequest | None = None
    can_free_memory: bool = False
    running: bool = False
    #: The size the card's Apply wrote into the cell (the frontend says so after writing it).
    applied: int | None = None


def base_card(
    diagnosis: Diagnosis,
    card_id: str,
    chart: tuple[DeviceSeries, ...],
    notes: tuple[str, ...],
    cell_id: str | None,
    execution_count: int | None,
    hang: HangEvidence | None = None,
) -> Card:
    """The card's fixed part: what the diagnosis found, and for a hang what the watchdog saw."""
    hang_evidence = hang_lines(hang) if hang is not None and diagnosis.kind is Kind.HANG else ()
    return Card(
        id=card_id,
        kind=diagnosis.kind.value,
        rule_id=diagnosis.rule_id,
        title=diagnosis.title,
        summary=diagnosis.summary,
        error_type=diagnosis.error_type,
        matched=diagnosis.matched,
        facts=facts_of(diagnosis),
        evidence=diagnosis.evidence + hang_evidence,
        remedies=tuple(card_remedy(remedy) for remedy in diagnosis.remedies),
        notes=notes,
        chart=chart,
        reclaimed=None,
        retry=None,
        batch_edit=None,
        actions=(),
        cell_id=cell_id,
        execution_count=execution_count,
    )


def hang_card(
    view: PanelView,
    stall: Stall,
    card_id: str,
    cell_id: str | None,
    execution_count: int | None,
) -> Card:
    """The watchdog's ``stall`` as a card: while it goes on, what the person can do; once it
    ended (progress came back, or the cell ended), what became of it."""
    watch = view.watch
    assert watch is not None
    going_on = stall.resumed_at is None and not view.finished
    return _plain_card(
        card_id,
        "hang",
        "hang.watchdog.stalled",
        stall_title(watch, stall),
        " ".join(stall_facts(stall, view.gpus_during(stall))),
        cell_id,
        execution_count,
        evidence=tuple(where_lines(stall.where.threads)),
        notes=tuple(action_lines(watch) if going_on else ended_stall_lines(view, stall)),
    )


#: The kind of a card that offers, or shows, a search for the largest batch of a cell that fitted.
SEARCH_KIND = "search"


def search_card(
    card_id: str, batch_size: int, cell_id: str | None, execution_count: int | None
) -> Card:
    """The card under a guarded Keras cell that fitted: the search for its largest batch."""
    return _plain_card(
        card_id,
        SEARCH_KIND,
        "retry.find_max",
        f"Batch size {batch_size} fits this cell",
        "Find the largest batch that fits: the guard measures larger sizes with its own "
        "training calls on this cell's model and data (a few steps each, whose training it "
        "then puts back; nothing of the cell runs), then runs the cell once, whole, at the "
        "largest that fits.",
        cell_id,
        execution_count,
    )


def _plain_card(
    card_id: str,
    kind: str,
    rule_id: str,
    title: str,
    summary: str,
    cell_id: str | None,
    execution_count: int | None,
    evidence: tuple[str, ...] = (),
    notes: tuple[str, ...] = (),
) -> Card:
    """A card of the guard's own (no error behind it: a stall, a search), its parts empty."""
    return Card(
        id=card_id,
        kind=kind,
        rule_id=rule_id,
        title=title,
        summary=summary,
        error_type="",
        matched="",
        facts=(),
        evidence=evidence,
        remedies=(),
        notes=notes,
        chart=(),
        reclaimed=None,
        retry=None,
        batch_edit=None,
        actions=(),
        cell_id=cell_id,
        execution_count=execution_count,
    )


def with_parts(card: Card, parts: CardParts) -> Card:
    """``card`` with its changing part as ``parts`` say."""
    request = parts.request
    actions = retry_actions(request, parts.running) if request is not None else ()
    freeing = next((r for r in card.remedies if r.action == FREE_MEMORY), None)
    if parts.can_free_memory and freeing is not None:
        reason = "an action is running" if parts.running else ""
        # The remedy's title says whose memory: "Free GPU memory", "Free CPU memory".
        actions += (ActionOffer(FREE_MEMORY, freeing.title, None, not parts.running, reason),)
    retry = retry_state(request, parts.running) if request is not None else None
    changed = replace(
        card,
        facts=_following_the_attempts(card.facts, retry),
        reclaimed=parts.reclaimed,
        retry=retry,
        remedies=_following_the_retry(card.remedies, retry) if retry is not None else card.remedies,
        batch_edit=batch_edit(request, card.cell_id) if request is not None else None,
        actions=actions,
    )
    return replace(changed, words=words_of(changed, parts.applied))


def _following_the_attempts(facts: tuple[Fact, ...], retry: RetryState | None) -> tuple[Fact, ...]:
    """Once a size has fitted, the estimate of what would fit is superseded: it is left out
    rather than shown beside the size that fitted ("under 1%" beside a fit at 12.5%)."""
    if retry is None or not any(attempt.result == "fits" for attempt in retry.attempts):
        return facts
    return tuple(fact for fact in facts if fact.name != "fit_fraction")


def _following_the_retry(
    remedies: tuple[CardRemedy, ...], retry: RetryState
) -> tuple[CardRemedy, ...]:
    """The remedy a retry carries out says the size the retry tries or found, not the estimate."""
    steps = batch_remedy_steps(retry)
    if steps is None:
        return remedies
    return tuple(
        replace(remedy, steps=steps) if remedy.action == RETRY else remedy for remedy in remedies
    )


def words_of(card: Card, applied: int | None = None) -> CardWords:
    """Every sentence of ``card`` beyond its diagnosis, from its changing part (``applied``:
    the size its Apply wrote into the cell)."""
    retry, edit = card.retry, card.batch_edit
    if card.reclaimed is None and retry is None:
        return NO_WORDS
    offer: tuple[str, ...] = ()
    if retry is not None:
        searching = card.kind == SEARCH_KIND
        offer = search_lines(retry.offer) if searching else offer_lines(retry.offer, card.facts)
    return CardWords(
        reclaim=reclaim_text(
            card.reclaimed,
            retry.capacity_bytes if retry is not None else None,
            retry is not None and retry.verdict is not None and retry.verdict.state == FIXED,
        )
        if card.reclaimed is not None
        else "",
        offer=offer,
        attempts=tuple(attempt_words(attempt, retry.capacity_bytes) for attempt in retry.attempts)
        if retry is not None
        else (),
        verdict=verdict_lines(retry, edit, applied) if retry is not None else (),
        edit=edit_text(edit, retry) if retry is not None else "",
    )


def reclaim_of(reclaimed: Reclaimed) -> Reclaim:
    return Reclaim(
        pending=False,
        freed_bytes=reclaimed.freed_bytes,
        held_bytes=reclaimed.held_bytes,
        frames_cleared=reclaimed.frames_cleared,
    )


def facts_of(diagnosis: Diagnosis) -> tuple[Fact, ...]:
    """Each fact with its label, unit and text, in the catalog's order."""
    facts = diagnosis.facts
    ordered = [name for name in FACT_LABELS if name in facts]
    ordered += [name for name in facts if name not in FACT_LABELS]
    return tuple(
        Fact(
            name=name,
            label=FACT_LABELS.get(name, name),
            value=facts[name],
            unit=_unit(name, facts[name]),
            text=fact_text(facts, name),
        )
        for name in ordered
    )


def _unit(name: str, value: object) -> str | None:
    if name.endswith("_bytes") and isinstance(value, int):
        return "bytes"
    if name == "fit_fraction" and isinstance(value, float):
        return "fraction"
    return None


def card_remedy(remedy: Remedy) -> CardRemedy:
    """A catalog remedy as the protocol's data (the card, the doctor's ``--json``)."""
    return CardRemedy(
        id=remedy.id,
        title=remedy.title,
        why=remedy.why,
        steps=remedy.steps,
        action=remedy.action,
        note=remedy.note,
        links=tuple(Link(label, url) for label, url in remedy.links),
    )
