"""NVIDIA's Xid catalog (``xid_catalog.json``): what each Xid the driver logs means.

The driver writes ``NVRM: Xid (PCI:0000:01:00): 79, ...`` to the kernel log; a device plugin
says ``Xid=79``, a monitor ``XID 79(GPU has fallen off the bus)``. One failure often logs
several: a fault, the cleanup of the work it stopped (45, "caused by previous Xid 13"), then a
timeout of that work (109). The fault is the cause, so a fault code decides over a timeout, and
a code that only reports another's consequence decides over nothing. A code the catalog does
not know is the driver's error all the same: a fault.

The diagnosis reads pasted Xids with it, and the doctor reads this boot's kernel log with it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib import resources

#: Where an Xid code is written: the driver's line, a device plugin's, a monitor's, and the
#: code a cleanup names as its cause. ``XID 641`` of a network driver's line is not one.
_XID_PATTERNS = (
    r"\bXid \((?:PCI:)?[^)\n]*\):\s*{code}\b",
    r"\bXid={code}\b",
    r"\bXID {code}\(",
    r"\bcaused by previous Xid {code}\b",
)
_ANY_CODE = r"(\d{1,4})"
_UNLISTED_ACTION = "Restart the kernel, and look the code up in NVIDIA's Xid catalog."


@dataclass(frozen=True)
class Xid:
    """One code of the catalog: ``kind`` is ``hang``, ``fault`` or ``secondary``."""

    code: int
    kind: str
    name: str
    action: str


@dataclass(frozen=True)
class Catalog:
    source: str
    read: str
    codes: dict[int, Xid]

    def entry(self, code: int) -> Xid:
        """The catalog's entry, or a fault of unknown name for a code it does not list."""
        return self.codes.get(code) or Xid(code, "fault", "not in the catalog", _UNLISTED_ACTION)

    def codes_of(self, kind: str) -> tuple[int, ...]:
        return tuple(code for code, xid in self.codes.items() if xid.kind == kind)


@cache
def catalog() -> Catalog:
    """The catalog shipped with the package (read once)."""
    data = json.loads(resources.files(__package__).joinpath("xid_catalog.json").read_text())
    codes = {
        int(code): Xid(int(code), entry["kind"], entry["name"], entry["action"])
        for code, entry in data["codes"].items()
    }
    return Catalog(data["source"], data["read"], codes)


def signatures(*kinds: str, unknown: bool = False) -> tuple[str, ...]:
    """Patterns that match an Xid of one of ``kinds``; ``unknown``: of a code not catalogued."""
    codes = [code for kind in kinds for code in catalog().codes_of(kind)]
    alternation = "(?:" + "|".join(map(str, sorted(codes))) + ")"
    patterns = [pattern.format(code=alternation) for pattern in _XID_PATTERNS] if codes else []
    if unknown:
        known = "(?!(?:" + "|".join(map(str, sorted(catalog().codes))) + r")\b)\d{1,4}"
        patterns += [pattern.format(code=known) for pattern in _XID_PATTERNS]
    return tuple(patterns)


def codes_in(texts: Iterable[str]) -> list[int]:
    """Every Xid code written in ``texts``, in the order written."""
    found: list[tuple[int, int, int]] = []
    for order, text in enumerate(texts):
        for pattern in _XID_PATTERNS:
            for match in re.finditer(pattern.format(code=_ANY_CODE), text):
                found.append((order, match.start(), int(match.group(1))))
    return [code for *_, code in sorted(found)]


def decisive(codes: Iterable[int]) -> Xid | None:
    """The code that says what happened: the first fault, else the first timeout, else the
    first code that only reports another's consequence."""
    entries = [catalog().entry(code) for code in codes]
    for kind in ("fault", "hang", "secondary"):
        chosen = next((entry for entry in entries if entry.kind == kind), None)
        if chosen is not None:
            return chosen
    return None


def xid_facts(texts: Iterable[str]) -> dict[str, int | str]:
    """The decisive Xid of ``texts`` as facts of a diagnosis: its code, name and action."""
    chosen = decisive(codes_in(texts))
    if chosen is None:
        return {}
    return {"xid": chosen.code, "xid_name": chosen.name, "xid_action": chosen.action}
