"""Check JSON against the shipped schema, as the TypeScript side will."""

from __future__ import annotations

from typing import Any

import jsonschema

from ipy_gpuguard.protocol import schema


def assert_valid(definition: str, data: Any) -> None:
    """``data`` is a valid ``definition`` of the schema; the first error says where it is not."""
    validator = jsonschema.Draft202012Validator(
        {"$ref": f"#/$defs/{definition}", "$defs": schema()["$defs"]}
    )
    errors = sorted(validator.iter_errors(data), key=lambda error: list(error.path))
    assert not errors, f"{list(errors[0].path)}: {errors[0].message}"
