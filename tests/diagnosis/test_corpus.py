"""The corpus: real error texts as the frameworks print them, the expected rule beside each.

``tests/data/errors/<rule id>/<variant>.txt``; ``unknown/`` holds the negative controls, which
must get no GPU diagnosis.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from ipy_gpuguard.diagnosis import REMEDIES, RULES, Context, Kind, diagnose

CORPUS = Path(__file__).parent.parent / "data" / "errors"
CASES = sorted(CORPUS.glob("*/*.txt"))


def expected_rule(case: Path) -> str:
    return case.parent.name


#: Rules that only the watchdog's own interrupt makes match.
AFTER_WATCHDOG = {rule.id for rule in RULES if rule.after_watchdog_interrupt}


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case.parent.name}/{case.stem}")
def test_each_corpus_case_gets_its_rule(case):
    context = Context(watchdog_interrupted=expected_rule(case) in AFTER_WATCHDOG)
    diagnosis = diagnose(case.read_text(), context)
    assert diagnosis.rule_id == expected_rule(case), diagnosis.matched


@pytest.mark.parametrize(
    "case",
    [case for case in CASES if expected_rule(case) in AFTER_WATCHDOG],
    ids=lambda case: case.stem,
)
def test_the_same_interrupt_without_the_watchdog_is_the_persons_and_gets_no_card(case):
    assert diagnose(case.read_text(), Context()).kind is Kind.UNKNOWN


@pytest.mark.parametrize(
    "case",
    [case for case in CASES if expected_rule(case) == "unknown"],
    ids=lambda case: case.stem,
)
def test_negative_controls_get_no_gpu_card(case):
    diagnosis = diagnose(case.read_text(), Context())
    assert diagnosis.kind is Kind.UNKNOWN
    assert not diagnosis.is_gpu_failure
    assert diagnosis.remedies == ()


def test_rule_ids_are_unique_and_dotted_under_their_kind():
    ids = [rule.id for rule in RULES]
    assert len(ids) == len(set(ids))
    for rule in RULES:
        assert re.fullmatch(r"[a-z_]+(\.[a-z0-9_]+)+", rule.id), rule.id
        assert rule.id.split(".")[0] == rule.kind.value, rule.id


def test_every_rule_has_corpus_cases_and_real_remedies():
    cases = Counter(expected_rule(case) for case in CASES)
    for rule in RULES:
        assert cases[rule.id] >= 1, f"{rule.id} has no case in tests/data/errors/{rule.id}/"
        assert rule.remedies, rule.id
        assert all(remedy in REMEDIES for remedy in rule.remedies), rule.id
        assert rule.title, rule.id
        assert rule.summary.endswith("."), rule.id


def test_every_kind_has_several_variants_and_every_rule_a_negative():
    """Each kind is covered by several real variants; each rule's signatures stay out of the
    negative controls (its negative case)."""
    rule_kinds = {rule.id: rule.kind for rule in RULES}
    per_kind = Counter(rule_kinds.get(expected_rule(case), Kind.UNKNOWN) for case in CASES)
    assert all(per_kind[kind] >= 3 for kind in Kind), per_kind
    negatives = [case.read_text() for case in CASES if expected_rule(case) == "unknown"]
    assert len(negatives) >= 5
    for rule in RULES:
        for text in negatives:
            assert diagnose(text, Context()).rule_id != rule.id


def test_every_remedy_is_used_by_a_rule():
    used = {remedy for rule in RULES for remedy in rule.remedies}
    assert set(REMEDIES) == used
