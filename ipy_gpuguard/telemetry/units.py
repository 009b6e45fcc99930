"""Memory sizes as people write them (``8GiB``) and as the panel shows them.

Hand-written rather than a dependency: two small functions, and the accepted spellings are part
of this package's interface (``GPUGUARD_SIMULATE``, ``%gpuguard simulate``).
"""

from __future__ import annotations

import re
from decimal import Decimal

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "m": 1000**2,
    "mb": 1000**2,
    "g": 1000**3,
    "gb": 1000**3,
    "t": 1000**4,
    "tb": 1000**4,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")
_SIZE_HELP = "a size like 8GiB, 512MiB or 16GB"
#: The most memory a simulated device may have: beyond any GPU made (the largest hold 288 GB).
MAX_DEVICE_BYTES = 1024**4
#: The most simulated devices: beyond what one machine holds (the densest servers hold 20 GPUs).
MAX_DEVICES = 32


def parse_size(text: str) -> int:
    """Return the number of bytes in ``text`` (``8GiB``, ``512 MiB``, ``16GB``).

    Raises
    ------
    ValueError
        With a message that says what is accepted. A bare number is refused: ``8`` could mean
        bytes or GiB, and guessing wrong would make a simulated device of 8 bytes.
    """
    match = _SIZE.match(text)
    unit = match.group(2).lower() if match else ""
    if not match or unit not in _UNITS or unit == "":
        raise ValueError(f"{text.strip()!r} is not {_SIZE_HELP}")
    size = Decimal(match.group(1)) * _UNITS[unit]  # exact, however many digits
    if size > MAX_DEVICE_BYTES:
        raise ValueError(
            f"{_shortened(text.strip())!r} is more than a GPU holds: give at most "
            f"{format_bytes(MAX_DEVICE_BYTES)}"
        )
    if int(size) <= 0:
        raise ValueError(f"{text.strip()!r} is not a positive size")
    return int(size)


def parse_size_list(text: str) -> tuple[int, ...]:
    """Parse comma-separated sizes (``8GiB,16GiB``): one simulated device per size."""
    parts = [part for part in text.split(",") if part.strip()]
    if not parts:
        raise ValueError(
            f"{text!r} names no size: give {_SIZE_HELP}, or several separated by commas"
        )
    if len(parts) > MAX_DEVICES:
        raise ValueError(
            f"{len(parts)} simulated devices are more than a machine holds: give at most "
            f"{MAX_DEVICES} sizes"
        )
    return tuple(parse_size(part) for part in parts)


def _shortened(text: str, limit: int = 40) -> str:
    """``text`` cut to ``limit`` characters for a message: a 10,000-digit size stays one line."""
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


def format_bytes(size: int | None) -> str:
    """Binary units with three significant figures (``7.52 GiB``); ``n/a`` for unknown."""
    if size is None:
        return "n/a"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024:
            return f"{value:.0f} B" if unit == "B" else f"{_three_figures(value)} {unit}"
        value /= 1024
    return f"{_three_figures(value)} TiB"


def _three_figures(value: float) -> str:
    """``1000`` stays ``1000``, not ``1e+03`` as the ``g`` format would write it."""
    if abs(value) >= 99.95:
        return f"{value:.0f}"
    return f"{value:.1f}" if abs(value) >= 9.995 else f"{value:.2f}"
