"""The server extension's endpoints, through a real jupyter_server (pytest-jupyter's jp_fetch)."""

from __future__ import annotations

import json

import pytest
from tornado.httpclient import HTTPClientError

from ..protocol.validate import assert_valid


@pytest.fixture
def simulated(monkeypatch):
    monkeypatch.setenv("GPUGUARD_SIMULATE", "8GiB")


async def test_every_endpoint_refuses_a_request_without_a_token(jp_fetch):
    for path in ("devices", "kernels/abc/state"):
        with pytest.raises(HTTPClientError) as refused:
            await jp_fetch("ipy-gpuguard", "api", "v1", path, headers={"Authorization": ""})
        assert refused.value.code == 403


async def test_devices_shows_the_simulated_gpu(simulated, jp_fetch):
    response = await jp_fetch("ipy-gpuguard", "api", "v1", "devices")
    reading = json.loads(response.body)
    assert_valid("MeterReading", reading)
    assert reading["source"] == "simulated"
    (device,) = reading["devices"]
    assert device["simulated"] is True
    assert device["total_bytes"] == 8 * 2**30


async def test_a_kernels_state_is_404_until_it_records_one(jp_fetch, jp_runtime_dir):
    with pytest.raises(HTTPClientError) as missing:
        await jp_fetch("ipy-gpuguard", "api", "v1", "kernels", "k-1", "state")
    assert missing.value.code == 404
    folder = jp_runtime_dir / "ipy_gpuguard"
    folder.mkdir()
    (folder / "kernel-k-1.json").write_text(json.dumps({"pid": 42, "running": True}))
    response = await jp_fetch("ipy-gpuguard", "api", "v1", "kernels", "k-1", "state")
    assert json.loads(response.body) == {"pid": 42, "running": True}
