"""The lab extension's TypeScript types and the shipped JSON Schema describe the same JSON: every
interface of ``labextension/src/protocol.ts`` has the fields of its definition (``ICard`` is
``Card``), optional exactly where the schema does not require them, and the version agrees."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ipy_gpuguard.protocol import SCHEMA_VERSION, schema

PROTOCOL_TS = Path(__file__).resolve().parents[2] / "labextension" / "src" / "protocol.ts"
_INTERFACE = re.compile(r"^export interface I(\w+) \{\n(.*?)^\}", re.M | re.S)
_FIELD = re.compile(r"^  (\w+)(\??):", re.M)


def interfaces() -> dict[str, dict[str, bool]]:
    """Each interface's fields, by name, and whether each is optional."""
    text = PROTOCOL_TS.read_text(encoding="utf-8")
    return {
        name: {field: bool(optional) for field, optional in _FIELD.findall(body)}
        for name, body in _INTERFACE.findall(text)
    }


@pytest.mark.parametrize("name", sorted(interfaces()))
def test_an_interface_has_the_fields_of_its_definition(name):
    definition = schema()["$defs"][name]
    fields = interfaces()[name]
    assert set(fields) == set(definition["properties"])
    optional = {field for field, is_optional in fields.items() if is_optional}
    # The kernel always writes ``version`` (a default of the dataclass, hence not required).
    assert optional == set(definition["properties"]) - set(definition["required"]) - {"version"}


def test_every_record_the_extension_reads_has_an_interface():
    read = {"Card", "CardWords", "AttemptWords", "RetryState", "ActionResult", "LiveCards"}
    read |= {"MeterReading", "KernelState", "PostMortem", "StateReport"}
    assert read <= set(interfaces())


def test_the_extension_reads_this_version():
    text = PROTOCOL_TS.read_text(encoding="utf-8")
    assert f"export const SCHEMA_VERSION = {SCHEMA_VERSION};" in text


_TYPED_FIELD = re.compile(r"^  (\w+)\??: (.+);$", re.M)
_SCALARS = {"string": "string", "integer": "number", "number": "number", "boolean": "boolean"}


def _ts_type(prop: dict) -> set[str]:
    """The TypeScript type a schema property stands for, as the set of its union's members."""
    if "$ref" in prop:
        name = prop["$ref"].rsplit("/", 1)[1]
        if name[0].isupper():  # a record: its interface
            return {"I" + name}
        return _ts_type(schema()["$defs"][name])  # a named value type: what it stands for
    if "enum" in prop:
        return {"null" if value is None else f"'{value}'" for value in prop["enum"]}
    if "const" in prop:  # the version: a number, whose value the test above checks
        return {f"'{prop['const']}'" if isinstance(prop["const"], str) else "number"}
    for union in ("anyOf", "oneOf"):
        if union in prop:
            return set().union(*(_ts_type(member) for member in prop[union]))
    kinds = prop.get("type")
    if isinstance(kinds, list):
        return set().union(*(_ts_type({**prop, "type": kind}) for kind in kinds))
    if kinds == "null":
        return {"null"}
    if kinds == "array":
        items = _ts_type(prop.get("items", {}))
        inner = " | ".join(sorted(items))
        return {f"({inner})[]" if len(items) > 1 else f"{inner}[]"}
    if kinds == "object":
        values = prop.get("additionalProperties")
        inner = " | ".join(sorted(_ts_type(values))) if isinstance(values, dict) else "unknown"
        return {f"Record<string, {inner}>"}
    if kinds in _SCALARS:
        return {_SCALARS[kinds]}
    return {"unknown"}


def _union(text: str) -> set[str]:
    """The members of a TypeScript union, split at its top level."""
    members, depth, current = set(), 0, ""
    for char in text:
        depth += char in "(<[{"
        depth -= char in ")>]}"
        if char == "|" and depth == 0:
            members.add(current.strip())
            current = ""
        else:
            current += char
    members.add(current.strip())
    return {
        " | ".join(sorted(_union(m[1:-3]))).join("()") + "[]"
        if m.startswith("(") and m.endswith(")[]")
        else m
        for m in members
    }


_ALIAS = re.compile(r"^export type (\w+) =\s*(.+?);$", re.M | re.S)


def typed_fields() -> dict[str, dict[str, set[str]]]:
    """Each interface's fields and their types, the union's members, aliases spelled out."""
    text = PROTOCOL_TS.read_text(encoding="utf-8")
    aliases = {
        name: _union(" ".join(kind.split()).lstrip("| ")) for name, kind in _ALIAS.findall(text)
    }

    def spelled(members: set[str]) -> set[str]:
        return set().union(*(aliases.get(member, {member}) for member in members))

    return {
        name: {field: spelled(_union(kind)) for field, kind in _TYPED_FIELD.findall(body)}
        for name, body in _INTERFACE.findall(text)
    }


@pytest.mark.parametrize("name", sorted(interfaces()))
def test_an_interface_has_the_value_types_and_enums_of_its_definition(name):
    """Not only the field names: a field's type, an enum's values, a reference's interface."""
    definition = schema()["$defs"][name]
    for field, declared in typed_fields()[name].items():
        expected = _ts_type(definition["properties"][field])
        assert declared == expected, (name, field)
