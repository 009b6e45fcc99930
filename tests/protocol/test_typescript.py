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
    read |= {"MeterReading", "KernelState", "PostMortem"}
    assert read <= set(interfaces())


def test_the_extension_reads_this_version():
    text = PROTOCOL_TS.read_text(encoding="utf-8")
    assert f"export const SCHEMA_VERSION = {SCHEMA_VERSION};" in text
