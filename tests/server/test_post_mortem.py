"""The likely cause of a kernel's death, from what it last recorded."""

from __future__ import annotations

import dataclasses

import pytest

from ipy_gpuguard.protocol import KernelState, RunningCell, to_json
from ipy_gpuguard.server.post_mortem import post_mortem

from ..protocol.validate import assert_valid

GIB = 2**30
LAST = KernelState(
    pid=42,
    kernel_id="k",
    updated_at=1000.0,
    running=True,
    cell=RunningCell("c-1", 3, "history = model.fit(x, y)"),
    phase="fit",
    step=40,
    last_step_at=999.8,
    devices=(),
    last_rule_id=None,
    outcome=None,
    host_available_bytes=8 * GIB,
    host_total_bytes=32 * GIB,
    platform="linux",
)


@pytest.mark.parametrize(
    ("changes", "cause"),
    [
        ({"host_available_bytes": 1 * GIB}, "host_memory"),  # 3% left
        ({"host_available_bytes": 4 * GIB}, "unknown"),  # 12.5% left: not the OOM killer
        ({"platform": "win32", "last_step_at": 995.0}, "gpu_timeout"),  # a 5 s step
        ({"platform": "win32", "last_step_at": 999.5}, "unknown"),  # steps still came
        ({"platform": "linux", "last_step_at": 995.0}, "unknown"),  # no TDR on Linux
        ({"platform": "win32", "running": False, "last_step_at": 900.0}, "unknown"),
        ({"last_rule_id": "hang.directml.device_hung", "running": False}, "gpu_timeout"),
        ({"last_rule_id": "fault.xid"}, "gpu_fault"),
        ({"host_available_bytes": None, "host_total_bytes": None}, "unknown"),
    ],
)
def test_the_cause_follows_the_last_record(changes, cause):
    found = post_mortem(dataclasses.replace(LAST, **changes))
    assert found.cause == cause
    assert found.remedies
    assert_valid("PostMortem", to_json(found))


def test_out_of_host_memory_outranks_the_last_diagnosis():
    state = dataclasses.replace(LAST, host_available_bytes=GIB // 2, last_rule_id="fault.xid")
    found = post_mortem(state)
    assert (found.cause, found.title) == (
        "host_memory",
        "Out of host memory: the OS killed the kernel",
    )
    assert "0.5 GiB" in found.why


def test_the_causes_remedies_are_the_catalogs():
    """Issue 21: the post-mortem was a second catalog of causes and remedies."""
    from ipy_gpuguard.diagnosis.remedies import REMEDIES

    found = post_mortem(dataclasses.replace(LAST, platform="win32", last_step_at=995.0))
    titles = [line.split(":")[0] for line in found.remedies]
    assert titles == [
        REMEDIES["smaller_work"].title,
        REMEDIES["tdr_registry"].title,
        REMEDIES["update_driver"].title,
    ]
    assert "Windows TDR, 2 s by default" in found.why


def test_the_remedies_of_a_death_are_filled_in_and_name_no_framework():
    """A remedy's steps are templates ({upgrade_framework}); the server knows no kernel's stack."""
    found = post_mortem(dataclasses.replace(LAST, platform="win32", last_step_at=995.0))
    text = " ".join(found.remedies)
    assert "{" not in text
    assert "}" not in text
    assert "Upgrade the framework you train with" in text
    assert not any(name in text for name in ("TensorFlow", "PyTorch", "JAX", "tensorflow"))
