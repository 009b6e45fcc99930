"""From the protocol's dataclasses to JSON values, and the schema that describes them."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from enum import Enum
from functools import cache
from typing import Any

#: The version of every record this package writes (cards, action results, kernel state).
#: Version 1 was the card of the first releases: flat facts, no actions, no batch edit.
#: Version 2 had no words: each frontend worded the verdict, the attempts and the reclaim itself.
SCHEMA_VERSION = 3


def to_json(value: Any) -> Any:
    """A protocol value as JSON data: dataclasses become objects, tuples lists, enums values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            field.name: to_json(getattr(value, field.name)) for field in dataclasses.fields(value)
        }
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, (tuple, list)):
        return [to_json(item) for item in value]
    if isinstance(value, Mapping):
        return {str(key): to_json(item) for key, item in value.items()}
    return value


@cache
def schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the protocol, as shipped in ``schema.json``."""
    from importlib import resources  # only tests and the frontend's build read it: not at load

    text = resources.files(__package__).joinpath("schema.json").read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded
