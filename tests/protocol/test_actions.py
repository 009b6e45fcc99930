"""An action from a frontend is taken exactly when the schema's ``Action`` allows it, and a
refusal quotes at most a short excerpt of what was sent (issue 22, item 14)."""

from __future__ import annotations

import jsonschema
import pytest

from ipy_gpuguard.protocol import MAX_BATCH_SIZE, parse_action, schema

ACTION = jsonschema.Draft202012Validator({"$ref": "#/$defs/Action", "$defs": schema()["$defs"]})

PAYLOADS = [
    {"action": "retry", "card": "c1"},
    {"action": "retry", "card": "c1", "args": {}},
    {"action": "retry", "card": "c1", "args": {"batch_size": 32}},
    {"action": "retry", "card": "c1", "args": {"batch_size": None}},
    {"action": "retry", "card": "c1", "args": {"batch_size": MAX_BATCH_SIZE}},
    {"action": "find_max", "card": "c1", "request": "r1"},
    {"action": "retry", "card": "c" * 64, "request": "r" * 64},
    # refused
    {"action": "retry", "card": "c1", "extra": 1},  # a field the schema does not have
    {"action": "retry", "card": "c1", "args": {"batch_size": 10**30}},  # reran the cell
    {"action": "retry", "card": "c1", "args": {"batch_size": MAX_BATCH_SIZE + 1}},
    {"action": "retry", "card": "c1", "args": {"batch_size": 0}},
    {"action": "retry", "card": "c1", "args": {"batch_size": True}},
    {"action": "retry", "card": "c1", "args": {"batch_size": 32.0}},
    {"action": "retry", "card": "c1", "args": {"size": 32}},
    {"action": "retry", "card": "c1", "args": None},
    {"action": "retry", "card": ""},
    {"action": "retry", "card": "c" * 65},
    {"action": "retry", "card": "c1", "request": "r" * 65},
    {"action": "explode", "card": "c1"},
    {"card": "c1"},
    ["retry", "c1"],
]


def accepted(payload) -> bool:
    try:
        parse_action(payload)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("payload", PAYLOADS, ids=range(len(PAYLOADS)))
def test_an_action_is_taken_exactly_when_the_schema_allows_it(payload):
    assert accepted(payload) == ACTION.is_valid(payload)


@pytest.mark.parametrize(
    "payload",
    [
        {"action": "retry", "card": "c" * 10_000_000},
        {"action": "x" * 10_000_000, "card": "c1"},
        {"action": "retry", "card": "c1", "args": {"batch_size": "9" * 10_000_000}},
        {"action": "retry", "card": "c1", "x" * 10_000_000: 1},
    ],
    ids=["card", "action", "batch_size", "field"],
)
def test_a_refusal_of_a_huge_payload_quotes_a_short_excerpt(payload):
    """A refusal of a 10 MB payload echoed all 10 MB back."""
    with pytest.raises(ValueError, match=r".") as refused:
        parse_action(payload)
    assert len(str(refused.value)) < 200
