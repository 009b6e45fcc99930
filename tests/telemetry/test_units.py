from __future__ import annotations

import pytest

from ipy_gpuguard.telemetry.units import format_bytes, parse_size, parse_size_list


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("8GiB", 8 * 1024**3),
        ("512 MiB", 512 * 1024**2),
        ("16GB", 16 * 10**9),
        ("1.5gib", 3 * 1024**3 // 2),
    ],
)
def test_parse_size(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["8", "8XB", "", "GiB", "-1GiB", "0GiB"])
def test_parse_size_refuses_what_it_cannot_read(text):
    with pytest.raises(ValueError, match="size"):
        parse_size(text)


def test_parse_size_list():
    assert parse_size_list("8GiB,16GiB") == (8 * 1024**3, 16 * 1024**3)
    with pytest.raises(ValueError, match="names no size"):
        parse_size_list(" , ")


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (None, "n/a"),
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1.00 KiB"),
        (1000 * 1024**2, "1000 MiB"),
        (int(7.52 * 1024**3), "7.52 GiB"),
        (80 * 1024**3, "80.0 GiB"),
        (3 * 1024**4, "3.00 TiB"),
    ],
)
def test_format_bytes(size, text):
    assert format_bytes(size) == text
