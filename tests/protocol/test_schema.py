"""The shipped JSON Schema and the protocol's dataclasses describe the same JSON."""

from __future__ import annotations

import dataclasses
import types
import typing
from functools import partial

import jsonschema
import pytest

from ipy_gpuguard import protocol
from ipy_gpuguard.protocol import SCHEMA_VERSION, schema, to_json

#: Every dataclass of the protocol, by the name of its definition in the schema.
DATACLASSES = {
    cls.__name__: cls
    for cls in map(partial(getattr, protocol), protocol.__all__)
    if isinstance(cls, type) and dataclasses.is_dataclass(cls)
}


def validator(definition: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(
        {"$ref": f"#/$defs/{definition}", "$defs": schema()["$defs"]}
    )


def test_the_schema_is_a_valid_draft_2020_12_schema_of_this_version():
    jsonschema.Draft202012Validator.check_schema(schema())
    assert schema()["version"] == SCHEMA_VERSION
    assert schema()["$id"].endswith(f":{SCHEMA_VERSION}")


def test_every_dataclass_has_a_definition_and_every_object_definition_a_dataclass():
    objects = {name for name, spec in schema()["$defs"].items() if spec.get("type") == "object"}
    assert objects == set(DATACLASSES)


@pytest.mark.parametrize("name", sorted(DATACLASSES))
def test_a_definition_has_the_fields_of_its_dataclass_and_requires_those_without_default(name):
    cls = DATACLASSES[name]
    spec = schema()["$defs"][name]
    fields = dataclasses.fields(cls)
    assert set(spec["properties"]) == {field.name for field in fields}
    required = {
        field.name
        for field in fields
        if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
    }
    assert set(spec["required"]) == required
    assert spec["additionalProperties"] is False


@pytest.mark.parametrize("name", sorted(DATACLASSES))
def test_a_field_that_holds_a_dataclass_refers_to_its_definition(name):
    hints = typing.get_type_hints(DATACLASSES[name])
    properties = schema()["$defs"][name]["properties"]
    for field, hint in hints.items():
        nested = {arg.__name__ for arg in _leaves(hint) if arg.__name__ in DATACLASSES}
        refs = {ref.rsplit("/", 1)[1] for ref in _refs(properties[field])}
        assert nested == refs & set(DATACLASSES), field


def test_the_version_field_of_each_versioned_record_is_the_schema_version():
    for cls in (protocol.Card, protocol.ActionResult, protocol.KernelState):
        default = next(f.default for f in dataclasses.fields(cls) if f.name == "version")
        assert default == SCHEMA_VERSION
        assert schema()["$defs"][cls.__name__]["properties"]["version"] == {"const": default}


def test_a_wrong_record_is_refused_by_the_schema():
    state = protocol.KernelState(
        pid=1,
        kernel_id=None,
        updated_at=0.0,
        running=False,
        cell=None,
        phase=None,
        step=0,
        last_step_at=None,
        devices=(),
        last_rule_id=None,
        outcome="exploded",
    )
    errors = list(validator("KernelState").iter_errors(to_json(state)))
    assert [error.path[-1] for error in errors] == ["outcome"]


def test_to_json_turns_tuples_into_lists_and_keeps_none():
    edit = protocol.TextEdit(2, 4, 10, 12, "64", "32", "fit(batch_size=64)")
    batch = protocol.BatchEdit(cell_id=None, source_sha256="0" * 64, batch_size=32, edits=(edit,))
    data = to_json(batch)
    assert data["edits"] == [to_json(edit)]
    assert data["cell_id"] is None
    assert validator("BatchEdit").is_valid(data)


def _leaves(hint):
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType, tuple):
        for arg in typing.get_args(hint):
            if arg is not Ellipsis:
                yield from _leaves(arg)
    elif isinstance(hint, type):
        yield hint


def _refs(spec):
    if isinstance(spec, dict):
        if "$ref" in spec:
            yield spec["$ref"]
        for value in spec.values():
            yield from _refs(value)
    elif isinstance(spec, list):
        for value in spec:
            yield from _refs(value)
