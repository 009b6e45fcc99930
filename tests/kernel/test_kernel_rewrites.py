"""In a real kernel: a retry reruns the cell with the number that reached the failing call, and
a guarded cell run inside another says why it does not retry (issue 22, items 9, 11, 13)."""

from __future__ import annotations

import ast

import pytest

from ..shell.test_retry_rewrites import CALLS
from .client import evaluate, execute, kernel

pytestmark = pytest.mark.kernel


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    # Its own data folder: the sizes that fit are remembered there, not where other tests look.
    data = tmp_path_factory.mktemp("jupyter-data")
    with kernel(GPUGUARD_SIMULATE="8GiB", JUPYTER_DATA_DIR=str(data)) as client:
        assert execute(client, "%load_ext ipy_gpuguard").status == "ok"
        yield client


@pytest.fixture
def calls(client):
    """The calls the cell made, as (call, batch size); cleared before each test."""
    assert execute(client, "ran = []").status == "ok"
    return lambda: evaluate(client, "ran")


def test_the_branch_that_ran_is_the_one_retried(client, calls):
    run = execute(
        client,
        "%%gpuguard --auto-retry 2\n" + CALLS + "FAST = True\n"
        "if FAST:\n    BATCH = 256\nelse:\n    BATCH = 64\nfit(batch_size=BATCH)\n",
    )
    sizes = ast.literal_eval(calls())
    assert {call for call, _ in sizes} == {"fit"}
    assert len(sizes) >= 2  # the failure, then at least one attempt
    ran_with = [size for _, size in sizes]
    assert ran_with[0] == 256
    assert ran_with == sorted(set(ran_with), reverse=True)  # each attempt smaller: it took
    assert run.status == ("ok" if ran_with[-1] <= 100 else "error")


def test_the_call_that_failed_in_a_helper_is_the_one_retried(client, calls):
    run = execute(
        client,
        "%%gpuguard --auto-retry 2\n" + CALLS + "def train():\n    fit(batch_size=64)\n"
        "    evaluate(batch_size=512)\n"
        "train()\n",
    )
    sizes = ast.literal_eval(calls())
    assert {size for call, size in sizes if call == "fit"} == {64}
    evaluated = [size for call, size in sizes if call == "evaluate"]
    assert len(evaluated) >= 2
    assert evaluated[0] == 512
    assert evaluated == sorted(set(evaluated), reverse=True)  # each attempt smaller
    assert run.status == ("ok" if evaluated[-1] <= 100 else "error")


def test_a_guarded_cell_inside_a_guarded_cell_says_why_it_does_not_retry(client, calls):
    inner = "%%gpuguard --auto-retry 2\n" + CALLS + "fit(batch_size=512)\n"
    assert execute(client, f"inner = {inner!r}").status == "ok"
    run = execute(client, "%%gpuguard\nget_ipython().run_cell(inner)\nouter_ran = True\n")
    assert run.status == "ok"
    assert evaluate(client, "outer_ran") == "True"
    assert calls() == "[('fit', 512)]"
    said = [
        line
        for message in run.of_type("stream")
        if message["content"]["name"] == "stderr"
        for line in message["content"]["text"].splitlines()
        if line.startswith("ipy_gpuguard:")
    ]
    assert said == [
        "ipy_gpuguard: this cell (%%gpuguard --auto-retry 2) runs inside another guarded cell, "
        "whose guard watches it: its own options do not apply and its failure gets no card or "
        "retry; run it as a cell of its own to guard it"
    ]
