"""``--find-max`` in a real kernel on the cells people write, Keras 3 on TensorFlow and on JAX
(issues 23 and 34): a fit that validates, a generator, a custom loop, and a Stop during a whole
run of a search. One kernel per backend; each test builds the model afresh."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.retry.test_probes import HEARING, LIMIT, MADE_AFRESH, MODEL, SAMPLES, STOPPED_AT_128

from .client import evaluate, execute, keras_kernel
from .test_kernel_probes import JAX_MODEL, cards

pytestmark = pytest.mark.kernel

#: The largest batch that fits: TensorFlow's cliff; on JAX the data (XLA drops the hog's
#: unused allocation, so a batch holding all the samples is where the climb stops).
LARGEST = {"tensorflow": LIMIT, "jax": SAMPLES}
MODELS = {"tensorflow": MODEL, "jax": JAX_MODEL}


@pytest.fixture(scope="module", params=["tensorflow", "jax"])
def backend_kernel(request, tmp_path_factory) -> Iterator[tuple[str, Any]]:
    backend = request.param
    with keras_kernel(tmp_path_factory.mktemp(backend), KERAS_BACKEND=backend) as client:
        yield backend, client


@pytest.fixture
def model_kernel(backend_kernel) -> tuple[str, Any]:
    backend, client = backend_kernel
    assert execute(client, MODELS[backend]).status == "ok"
    return backend, client


def card_of(execution) -> dict[str, Any]:
    return cards(execution)[-1]


def steps(batch: int, epochs: int) -> int:
    return -(-SAMPLES // batch) * epochs


def test_a_fit_that_validates_reaches_the_persons_callbacks_in_its_whole_runs_alone(model_kernel):
    backend, client = model_kernel
    execute(client, HEARING)
    run = execute(
        client,
        "%%gpuguard --find-max\n"
        "BATCH = 64\n"
        "model.fit(x, y, batch_size=BATCH, epochs=2, shuffle=False, verbose=0,\n"
        "          validation_data=(x[:700], y[:700]), callbacks=[Hearing()])\n",
        timeout=300,
    )
    assert run.status == "ok"
    batch = int(evaluate(client, "BATCH"))
    assert 0.9 * LARGEST[backend] <= batch <= LARGEST[backend]
    # The cell's own run at 64, then the last run at the size found; none of the guard's
    # measurements, which are its own fits with no callback of the person's.
    heard = [("begin", 64), ("epoch", 64), ("epoch", 64), ("begin", batch)]
    heard += [("epoch", batch), ("epoch", batch)]
    assert evaluate(client, f"heard == {heard!r}") == "True", evaluate(client, "heard")
    assert int(evaluate(client, "int(model.optimizer.iterations)")) == steps(batch, 2)
    assert evaluate(client, "getattr(model, '_eval_epoch_iterator', None)") == "None"
    attempts = card_of(run)["retry"]["attempts"]
    assert sum(a["probe"] for a in attempts) >= 2


def test_a_generator_the_cell_makes_is_made_afresh_by_each_whole_run(model_kernel):
    backend, client = model_kernel
    run = execute(client, MADE_AFRESH, timeout=300)
    assert run.status == "ok"
    batch = int(evaluate(client, "BATCH"))
    assert 0.9 * LARGEST[backend] <= batch <= LARGEST[backend]
    assert int(evaluate(client, "int(model.optimizer.iterations)")) == steps(batch, 1)
    assert "cannot be rewound" not in json.dumps(card_of(run))


def test_a_generator_of_an_earlier_cell_is_said_to_be_used_up(model_kernel):
    _, client = model_kernel
    execute(
        client,
        "def batches():  # reads BATCH as it goes: a retry's size reaches it\n"
        "    while True:\n"
        "        for start in range(0, len(x), BATCH):\n"
        "            yield x[start:start + BATCH], y[start:start + BATCH]\n"
        "BATCH = 64\n"
        "stream = batches()\n",
    )
    run = execute(
        client,
        "%%gpuguard --find-max --batch-var BATCH\n"
        "model.fit(stream, steps_per_epoch=8, epochs=1, verbose=0)\n",
        timeout=300,
    )
    assert run.status == "ok"
    said = json.dumps(card_of(run))
    assert "drew batches from the generator given to fit" in said
    assert "cannot be rewound" in said


def test_a_custom_loop_is_searched_by_whole_runs_and_the_card_says_why(model_kernel):
    _, client = model_kernel
    run = execute(
        client,
        "%%gpuguard --find-max\n"
        "BATCH = 64\n"
        "runs = globals().get('runs', 0) + 1\n"
        "for start in range(0, 256, BATCH):\n"
        "    model.train_on_batch(x[start:start + BATCH], y[start:start + BATCH])\n",
        timeout=300,
    )
    assert run.status == "ok"
    card = card_of(run)
    assert "Each size was a whole run" in json.dumps(card)
    assert not any(a["probe"] for a in card["retry"]["attempts"])
    assert int(evaluate(client, "runs")) > 2  # whole runs, as before probes


def test_a_stop_during_a_whole_run_ends_the_search_and_puts_the_model_back(model_kernel):
    _, client = model_kernel
    execute(client, "before = [w.copy() for w in model.get_weights()]")
    run = execute(client, STOPPED_AT_128, timeout=300)
    assert run.reply["content"]["ename"] == "KeyboardInterrupt"  # not the guard's ProbeEnded
    sizes = [a["batch_size"] for a in card_of(run)["retry"]["attempts"]]
    assert sizes[-1] == 128  # the run the Stop reached, and no size after it
    assert 256 not in sizes
    assert int(evaluate(client, "int(model.optimizer.iterations)")) == 0
    same = "all(np.array_equal(a, b) for a, b in zip(before, model.get_weights()))"
    assert evaluate(client, same) == "True"  # as before the cell: no run that fitted stands
