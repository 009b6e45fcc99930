"""``--find-max`` by probes in a real kernel, Keras 3 on TensorFlow and on JAX (issue 23): the
model of an earlier cell is trained by the search's last run alone."""

from __future__ import annotations

import json

import pytest

from ipy_gpuguard.protocol import CARD_MIME
from tests.retry.test_probes import LIMIT, MODEL, PLAIN_FIT, SAMPLES

from .client import evaluate, execute, keras_kernel

pytestmark = pytest.mark.kernel

JAX_MODEL = f"""
import keras
import numpy as np
keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(8), keras.layers.Dense(1)])
model.compile(optimizer="adam", loss="mse")
rng = np.random.default_rng(0)
x = rng.random(({SAMPLES}, 16), "float32")
y = rng.random(({SAMPLES}, 1), "float32")
start_weights = model.get_weights()
"""

SEARCH = (
    "%%gpuguard --find-max\n"
    "BATCH = {start}\n"
    "model.fit(x, y, batch_size=BATCH, epochs=2, shuffle=False, verbose=0)\n"
)


def cards(execution) -> list[dict]:
    return [
        json.loads(json.dumps(msg["content"]["data"][CARD_MIME]))
        for msg in execution.iopub
        if msg["msg_type"] in ("display_data", "update_display_data")
        and CARD_MIME in msg["content"].get("data", {})
    ]


@pytest.mark.parametrize(
    ("backend", "model", "start", "largest"),
    [("tensorflow", MODEL, 1024, LIMIT), ("jax", JAX_MODEL, 64, SAMPLES)],
    ids=["tensorflow-from-a-failure", "jax-climbs-from-a-fit"],
)
def test_the_earlier_cells_model_is_trained_by_the_last_run_alone(
    tmp_path, backend, model, start, largest
):
    """TensorFlow: the cell runs out of memory above the cliff, the search probes down and up;
    JAX: the cell fits, and the search climbs until one batch holds all the data."""
    with keras_kernel(tmp_path, KERAS_BACKEND=backend) as client:
        assert execute(client, model).status == "ok"
        run = execute(client, SEARCH.format(start=start), timeout=300)
        assert run.status == "ok"  # the search's last run is the cell's
        batch = int(evaluate(client, "BATCH"))
        assert 0.9 * largest <= batch <= largest
        steps = -(-SAMPLES // batch) * 2
        assert int(evaluate(client, "int(model.optimizer.iterations)")) == steps
        assert execute(client, PLAIN_FIT).status == "ok"
        assert evaluate(client, "same_weights") == "True"
        attempts = cards(run)[-1]["retry"]["attempts"]
        assert [a["probe"] for a in attempts][-1] is False  # a whole run at the end
        assert sum(a["probe"] for a in attempts) >= 2
        assert attempts[-1]["batch_size"] == batch
