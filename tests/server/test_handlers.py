"""The server extension's endpoints, through a real jupyter_server (pytest-jupyter's jp_fetch)."""

from __future__ import annotations

import json
import os

import pynvml
import pytest
from tornado.httpclient import HTTPClientError

from ipy_gpuguard.protocol import SCHEMA_VERSION
from ipy_gpuguard.telemetry import open_backend
from ipy_gpuguard.telemetry.nvml import NvmlBackend

from ..protocol.validate import assert_valid
from ..telemetry.fake_pynvml import FakeGpu, make_fake_nvml


@pytest.fixture
def simulated(monkeypatch):
    monkeypatch.setenv("GPUGUARD_SIMULATE", "8GiB")


async def test_every_endpoint_refuses_a_request_without_a_token(jp_fetch):
    for path in ("devices", "kernels/abc/state", "kernels/abc/post-mortem"):
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


def record(**changes):
    """A whole state record, as a kernel writes one."""
    return {
        "pid": 42,
        "kernel_id": "k-1",
        "updated_at": 100.0,
        "running": True,
        "cell": {"cell_id": "c-7", "execution_count": 7, "first_line": "model.fit(x, y)"},
        "phase": "fit",
        "step": 12,
        "last_step_at": 99.5,
        "devices": [],
        "last_rule_id": None,
        "outcome": None,
        "host_available_bytes": 2**28,
        "host_total_bytes": 2**34,
        "platform": "linux",
        "host": "gpu-node-1",
        "version": SCHEMA_VERSION,
        **changes,
    }


def state_file(runtime_dir, kernel_id="k-1"):
    folder = runtime_dir / "ipy_gpuguard"
    folder.mkdir(exist_ok=True)
    return folder / f"kernel-{kernel_id}.json"


async def refused(jp_fetch, kernel_id="k-1", endpoint="state"):
    """The server's answer to a request it refuses: its code and its JSON message."""
    with pytest.raises(HTTPClientError) as error:
        await jp_fetch("ipy-gpuguard", "api", "v1", "kernels", kernel_id, endpoint)
    return error.value.code, json.loads(error.value.response.body)["message"]


async def test_a_kernels_state_is_404_until_it_records_one(jp_fetch, jp_runtime_dir):
    assert (await refused(jp_fetch))[0] == 404
    state_file(jp_runtime_dir).write_text(json.dumps(record()))
    response = await jp_fetch("ipy-gpuguard", "api", "v1", "kernels", "k-1", "state")
    assert json.loads(response.body) == record()


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (json.dumps(record(updated_at=1.0)).replace("1.0", "1e400"), "out of range"),
        (json.dumps(record(updated_at=1.0)).replace("1.0", "NaN"), "NaN is not a number"),
        (json.dumps(record(step="twelve")), "step"),
        (json.dumps(record(devices=[{"index": 0}])), "devices/0"),
        ("[" * 100_000 + "]" * 100_000, "the state file is not JSON"),
        (json.dumps(record(extra=1)), "not a state record"),
    ],
    ids=["huge", "nan", "wrong-type", "partial-device", "deep", "extra-field"],
)
async def test_a_record_that_is_not_one_is_a_short_json_error_on_every_endpoint(
    simulated, jp_fetch, jp_runtime_dir, text, said
):
    """Issue 22 item 16: ``1e400`` made the meter answer 500 to every client; wrong types and
    deep nesting gave unhandled 500s with tracebacks; NaN was served as invalid JSON."""
    state_file(jp_runtime_dir).write_text(text)
    for endpoint in ("state", "post-mortem"):
        code, message = await refused(jp_fetch, endpoint=endpoint)
        assert code == 500
        assert said in message
        assert str(jp_runtime_dir) not in message
        assert len(message) < 300
    response = await jp_fetch("ipy-gpuguard", "api", "v1", "devices")  # the meter still serves
    assert json.loads(response.body)["source"] == "simulated"


async def test_a_long_kernel_id_is_refused_without_a_path(jp_fetch, jp_runtime_dir):
    """Issue 22 item 16: a 300-character id answered 500 with the server's runtime path."""
    code, message = await refused(jp_fetch, kernel_id="k" * 300)
    assert code == 400
    assert str(jp_runtime_dir) not in message


async def test_a_link_in_the_runtime_folder_is_not_followed(jp_fetch, jp_runtime_dir):
    """Issue 22 item 1: a link to ``jpserver-<pid>.json`` handed out the server's token."""
    secret = jp_runtime_dir / "jpserver-1.json"
    secret.write_text(json.dumps(record(platform="token-abc")))
    state_file(jp_runtime_dir).symlink_to(secret)
    code, message = await refused(jp_fetch)
    assert code == 500
    assert "link" in message
    assert "token-abc" not in message


async def test_a_fifo_or_a_huge_file_answers_at_once(jp_fetch, jp_runtime_dir):
    """Issue 22 item 5: a FIFO blocked the whole server (the read ran on its event loop), and a
    100 MB state file stalled it for 1.4-1.9 s."""
    os.mkfifo(state_file(jp_runtime_dir, "k-fifo"))
    assert await refused(jp_fetch, kernel_id="k-fifo") == (
        500,
        "kernel k-fifo: the state file cannot be read: not a regular file",
    )
    with state_file(jp_runtime_dir, "k-huge").open("wb") as huge:
        huge.truncate(100 * 2**20)
    code, message = await refused(jp_fetch, kernel_id="k-huge")
    assert (code, message) == (
        500,
        "kernel k-huge: the state file cannot be read: it holds more than 1048576 bytes",
    )


async def test_a_dead_kernels_post_mortem_names_its_cell_and_the_likely_cause(
    jp_fetch, jp_runtime_dir
):
    with pytest.raises(HTTPClientError) as missing:
        await jp_fetch("ipy-gpuguard", "api", "v1", "kernels", "k-2", "post-mortem")
    assert missing.value.code == 404
    state = record(kernel_id="k-2")
    folder = jp_runtime_dir / "ipy_gpuguard"
    folder.mkdir()
    (folder / "kernel-k-2.json").write_text(json.dumps(state))
    response = await jp_fetch("ipy-gpuguard", "api", "v1", "kernels", "k-2", "post-mortem")
    found = json.loads(response.body)
    assert_valid("PostMortem", found)
    assert found["state"] == state
    assert found["cause"] == "host_memory"
    assert "0.2 GiB" in found["why"]

    (folder / "kernel-k-2.json").write_text(json.dumps({"pid": 42}))  # not a whole record
    code, message = await refused(jp_fetch, "k-2", "post-mortem")
    assert code == 500
    assert message.startswith("kernel k-2: the state file is not a state record")


async def test_a_post_mortem_is_made_from_the_record_a_kernel_elsewhere_reported(
    jp_fetch, jp_runtime_dir
):
    """Issue 38: a kernel behind a gateway writes its state file on its own machine; the lab
    extension posts the last record the kernel reported over its channels, and the server
    answers with the same post-mortem, writing nothing."""
    state = record(kernel_id="k-3")
    response = await jp_fetch(
        "ipy-gpuguard", "api", "v1", "kernels", "k-3", "post-mortem",
        method="POST", body=json.dumps(state),
    )  # fmt: skip
    found = json.loads(response.body)
    assert_valid("PostMortem", found)
    assert found["state"] == state
    assert found["cause"] == "host_memory"
    assert not (jp_runtime_dir / "ipy_gpuguard").exists()  # nothing written

    for body, why in [
        (json.dumps({"pid": 42}), "the state file is not a state record"),
        (json.dumps(record(kernel_id="k-9")), "the record is kernel k-9's, not k-3's"),
        ("[" * 100_000, "the state file is not JSON"),
    ]:
        with pytest.raises(HTTPClientError) as error:
            await jp_fetch(
                "ipy-gpuguard", "api", "v1", "kernels", "k-3", "post-mortem",
                method="POST", body=body,
            )  # fmt: skip
        assert error.value.code == 400
        assert why in json.loads(error.value.response.body)["message"]


def fake_nvml_meter(jp_serverapp, gpus, init_error=None):
    """The server's meter reading the fake ``pynvml`` (nvidia-ml-py's own error classes)."""
    meter = jp_serverapp.web_app.settings["ipy_gpuguard_meter"]
    nvml = make_fake_nvml(gpus, init_error=init_error)
    meter.open_telemetry = lambda spec: open_backend(
        spec, lambda: NvmlBackend.open(nvml, own_pid=os.getpid)
    )
    return meter


async def test_a_kernels_pid_in_nvmls_process_list_is_its_share(jp_fetch, jp_serverapp):
    started = await jp_fetch("api", "kernels", method="POST", body="{}")
    kernel_id = json.loads(started.body)["id"]
    pid = jp_serverapp.kernel_manager.get_kernel(kernel_id).provisioner.pid
    gpu = FakeGpu(processes=[(pid, 3 * 2**30), (os.getpid(), 2**30)])
    fake_nvml_meter(jp_serverapp, [gpu])
    response = await jp_fetch("ipy-gpuguard", "api", "v1", "devices")
    reading = json.loads(response.body)
    assert_valid("MeterReading", reading)
    assert reading["source"] == "nvml"
    assert reading["devices"][0]["name"] == "NVIDIA A100-SXM4-80GB"
    shares = {share["kernel_id"]: share["used_bytes"] for share in reading["kernels"]}
    assert shares == {kernel_id: 3 * 2**30}
    await jp_fetch("api", "kernels", kernel_id, method="DELETE")


async def test_without_a_driver_the_reading_says_why_in_one_line(jp_fetch, jp_serverapp):
    fake_nvml_meter(jp_serverapp, [FakeGpu()], init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
    response = await jp_fetch("ipy-gpuguard", "api", "v1", "devices")
    reading = json.loads(response.body)
    assert reading["source"] == "none"
    assert reading["devices"] == []
    assert "driver" in reading["reason"].lower()
    assert "\n" not in reading["reason"]


async def test_nvml_is_shut_down_with_the_extension(jp_fetch, jp_serverapp):
    """Issue 22: the server extension opened NVML and never shut it down."""
    meter = jp_serverapp.web_app.settings["ipy_gpuguard_meter"]
    nvml = make_fake_nvml([FakeGpu()])
    meter.open_telemetry = lambda spec: open_backend(
        spec, lambda: NvmlBackend.open(nvml, own_pid=os.getpid)
    )
    await jp_fetch("ipy-gpuguard", "api", "v1", "devices")
    assert nvml.initialised
    await jp_serverapp.cleanup_extensions()  # what the server does as it stops
    assert not nvml.initialised


async def test_a_reading_that_blocks_holds_up_no_request(jp_fetch, jp_serverapp):
    """Issue 22: the meter held its lock while NVML blocked, and every request waited on it."""
    import asyncio
    import threading

    meter = fake_nvml_meter(jp_serverapp, [FakeGpu()])
    first = json.loads((await jp_fetch("ipy-gpuguard", "api", "v1", "devices")).body)
    backend = meter._backend
    released = threading.Event()
    reading = backend.read

    def stuck(index):
        released.wait(10)  # a driver busy for seconds
        return reading(index)

    backend.read = stuck
    meter._cached = (meter._cached[0] - 60, meter._cached[1])  # the reading is old: take another
    try:
        for _ in range(3):  # the first starts a reading; none waits on it
            answer = await asyncio.wait_for(jp_fetch("ipy-gpuguard", "api", "v1", "devices"), 5)
            assert json.loads(answer.body)["updated_at"] == first["updated_at"]
    finally:
        released.set()
    while meter._taking is not None:
        await asyncio.sleep(0.01)
    later = json.loads((await jp_fetch("ipy-gpuguard", "api", "v1", "devices")).body)
    assert later["updated_at"] > first["updated_at"]
