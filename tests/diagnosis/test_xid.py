"""NVIDIA's Xid catalog as data, and what a pasted kernel log's Xids make of a failure."""

from __future__ import annotations

import re

import pytest

from ipy_gpuguard import diagnose
from ipy_gpuguard.diagnosis import Context, Kind
from ipy_gpuguard.diagnosis.xid import catalog, codes_in, decisive, xid_facts


def line(code: int, rest: str = "pid=4124, name=python, Ch 00000028") -> str:
    return f"NVRM: Xid (PCI:0000:01:00): {code}, {rest}"


def test_the_catalog_names_its_source_and_the_day_it_was_read():
    shipped = catalog()
    assert shipped.source.startswith("NVIDIA")
    assert "docs.nvidia.com" in shipped.source
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", shipped.read)
    assert {shipped.codes[code].kind for code in (8, 109, 119)} == {"hang"}
    assert {shipped.codes[code].kind for code in (13, 31, 48, 79, 94, 95)} == {"fault"}
    assert shipped.codes[45].kind == "secondary"
    assert all(entry.name and entry.action for entry in shipped.codes.values())


@pytest.mark.parametrize(
    ("codes", "expected"),
    [
        ([13, 13, 109], 13),  # the fault, then the timeout of the work it stopped
        ([109, 31], 31),  # a fault decides wherever it is written
        ([45, 45, 119], 119),  # cleanups only report; the timeout is the cause
        ([45], 45),  # alone, a cleanup says the work was stopped
        ([999], 999),  # a code the catalog does not list is the driver's error all the same
    ],
)
def test_a_fault_decides_over_a_timeout_and_a_timeout_over_a_cleanup(codes, expected):
    assert decisive(codes).code == expected


def test_every_way_an_xid_is_written_is_read_and_a_network_drivers_xid_is_not():
    texts = [
        "r8169 0000:03:00.0 eth0: RTL8125B, 58:47:ca:7b:55:71, XID 641, IRQ 51",
        line(45, "pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149"),
        "healthCheck report XidCriticalError: Xid=999 on Device=GPU-XXXX",
        "XID 79(GPU has fallen off the bus) detected on PCI:0000:ae:00",
    ]
    assert codes_in(texts) == [45, 149, 999, 79]


def test_the_card_names_the_xid_its_meaning_and_the_catalogs_advice():
    text = "\n".join([line(13, "Graphics SM Warp Exception"), line(109, "CTX SWITCH TIMEOUT")])
    found = diagnose(text, Context())
    assert found.rule_id == "fault.xid"
    assert found.title == "GPU fault (Xid 13: Graphics engine exception)"
    assert found.facts["xid_name"] == "Graphics engine exception"
    assert "CUDA_LAUNCH_BLOCKING=1" in found.facts["xid_action"]
    assert xid_facts([text])["xid"] == 13


def test_a_timeout_alone_is_a_hang_and_a_cleanup_names_its_cause():
    assert diagnose(line(119, "Timeout after 45s of waiting for RPC"), Context()).kind is Kind.HANG
    cleanup = line(45, "pid=1, name=python3, Ch 00000002 caused by previous Xid 145")
    found = diagnose(cleanup, Context())
    assert (found.kind, found.facts["xid"]) == (Kind.FAULT, 145)
