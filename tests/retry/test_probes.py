"""A search for the largest batch probes a few Keras steps per size and undoes them (issue 23):
real Keras on TensorFlow in a real IPython shell, real allocator out-of-memory errors on CPU."""

from __future__ import annotations

import re
from contextlib import nullcontext

import keras
import numpy as np
import pytest

from ipy_gpuguard.retry.measure import FitCall, Measurer, PeakReader

pytestmark = pytest.mark.tensorflow

LIMIT = 333  # the true largest batch: above it, every batch asks for terabytes
SAMPLES = 2048

MODEL = f"""
import keras
import numpy as np

class MemoryHog(keras.layers.Layer):  # tests/oom_cells.py's, with its own seed: a model kept
    def __init__(self, limit, **kwargs):  # across cells retraces after clear_session, and an
        super().__init__(**kwargs)  # unseeded op would then make a variable inside tf.function
        self.limit = limit
        self.seed = keras.random.SeedGenerator(1)

    def call(self, x):
        extra = keras.ops.maximum(keras.ops.shape(x)[0] - self.limit, 0)
        noise = keras.random.uniform((extra, 2**20, 2**20), seed=self.seed)
        return x + keras.ops.sum(noise) * 0

keras.utils.set_random_seed(0)
model = keras.Sequential([
    keras.Input((16,)), MemoryHog({LIMIT}, name="hog"), keras.layers.Dense(8), keras.layers.Dense(1)
])
model.compile(optimizer="adam", loss="mse", jit_compile=False)
rng = np.random.default_rng(0)
x = rng.random(({SAMPLES}, 16), "float32")
y = rng.random(({SAMPLES}, 1), "float32")
start_weights = model.get_weights()
"""

PLAIN_FIT = """
plain = keras.models.clone_model(model)
plain.set_weights(start_weights)
plain.compile(optimizer="adam", loss="mse", jit_compile=False)
plain.fit(x, y, batch_size=BATCH, epochs=2, shuffle=False, verbose=0)
same_weights = all(np.allclose(a, b) for a, b in zip(plain.get_weights(), model.get_weights()))
"""


@pytest.fixture
def keras_shell(shell, tmp_path):
    shell.run_line_magic("config", f"GPUGuard.batch_memory = {str(tmp_path / 'sizes.json')!r}")
    assert shell.run_cell(MODEL).success
    return shell


def steps(batch: int, epochs: int = 2) -> int:
    return -(-SAMPLES // batch) * epochs


def test_a_search_from_a_failure_trains_the_earlier_cells_model_once_at_the_size_found(
    keras_shell, capsys
):
    result = keras_shell.run_cell(
        "%%gpuguard --find-max\n"
        "BATCH = 1024\n"
        "model.fit(x, y, batch_size=BATCH, epochs=2, shuffle=False, verbose=0)\n"
    )
    out = capsys.readouterr().out
    ns = keras_shell.user_ns
    assert result.error_in_exec is None  # the search's last run is the cell's
    assert 0.9 * LIMIT <= ns["BATCH"] <= LIMIT
    assert int(ns["model"].optimizer.iterations) == steps(ns["BATCH"])  # one run's, not the probes'
    assert keras_shell.run_cell(PLAIN_FIT).success
    assert ns["same_weights"]  # as a plain fit from the same start
    probes = re.findall(r"retry: batch size (\d+): probe: (fits|out of memory)", out)
    assert len(probes) >= 3
    assert f"retry: batch size {ns['BATCH']}: fits" in out  # then one whole run


def test_a_cell_that_fits_climbs_by_probes(keras_shell, capsys):
    result = keras_shell.run_cell(
        "%%gpuguard --find-max\n"
        "BATCH = 64\n"
        "model.fit(x, y, batch_size=BATCH, epochs=2, shuffle=False, verbose=0)\n"
    )
    out = capsys.readouterr().out
    ns = keras_shell.user_ns
    assert result.error_in_exec is None
    assert 0.9 * LIMIT <= ns["BATCH"] <= LIMIT
    assert int(ns["model"].optimizer.iterations) == steps(ns["BATCH"])
    assert "Fixed: batch size" in out
    assert "retry: batch size 128: probe: fits" in out  # it climbed, a probe at a time


#: A callback of the person's that records what it hears: a probe must reach none of it.
HEARING = (
    "class Hearing(keras.callbacks.Callback):\n"
    "    def on_train_begin(self, logs=None):\n"
    "        heard.append(('begin', BATCH))\n"
    "    def on_epoch_end(self, epoch, logs=None):\n"
    "        heard.append(('epoch', BATCH))\n"
    "heard = []\n"
)

#: A cell whose data stops it, as the Stop button would, at its third batch of size 128 (a
#: probe's); the person's callbacks cannot, as a probe's run leaves them out.
STOPPED_AT_128 = """%%gpuguard --find-max
import os, signal
BATCH = 64
def batches(size):
    for step in range(10**6):
        if size == 128 and step == 2:
            os.kill(os.getpid(), signal.SIGINT)
        start = step * size % len(x)
        yield x[start:start + size], y[start:start + size]
model.fit(batches(BATCH), steps_per_epoch=-(-len(x) // BATCH), epochs=1, verbose=0)
"""


#: A guarded cell that makes its own generator of batches of its size.
MADE_AFRESH = (
    "%%gpuguard --find-max\n"
    "BATCH = 64\n"
    "def batches(size):\n"
    "    while True:\n"
    "        for start in range(0, len(x), size):\n"
    "            yield x[start:start + size], y[start:start + size]\n"
    "model.fit(batches(BATCH), steps_per_epoch=-(-len(x) // BATCH), epochs=1, verbose=0)\n"
)


def test_a_probe_never_reaches_the_persons_callbacks_and_validation_runs_one_step(
    keras_shell, capsys
):
    keras_shell.run_cell(HEARING)
    result = keras_shell.run_cell(
        "%%gpuguard --find-max\n"
        "BATCH = 512\n"
        "model.fit(x, y, batch_size=BATCH, epochs=2, shuffle=False, verbose=0,\n"
        "          validation_data=(x[:700], y[:700]), callbacks=[Hearing()])\n"
    )
    ns = keras_shell.user_ns
    assert result.error_in_exec is None
    # Validation at a size above the cliff fails: a probe that stopped at its training steps
    # would have said the size fits.
    assert ns["BATCH"] <= LIMIT
    batch = ns["BATCH"]
    # The cell's own run at 512 (out of memory at its first step), then the search's last run:
    # the guard's measurements in between are its own fits, which no callback of the cell hears.
    assert ns["heard"] == [("begin", 512), ("begin", batch), ("epoch", batch), ("epoch", batch)]
    assert getattr(ns["model"], "_eval_epoch_iterator", None) is None


def test_a_generator_of_an_earlier_cell_is_said_to_be_used_up(keras_shell, capsys):
    keras_shell.run_cell(
        "def batches():  # reads BATCH as it goes: a retry's size reaches it\n"
        "    while True:\n"
        "        for start in range(0, len(x), BATCH):\n"
        "            yield x[start:start + BATCH], y[start:start + BATCH]\n"
        "BATCH = 64\n"
        "stream = batches()\n"
    )
    result = keras_shell.run_cell(
        "%%gpuguard --find-max --batch-var BATCH\n"
        "model.fit(stream, steps_per_epoch=8, epochs=1, verbose=0)\n"
    )
    out = capsys.readouterr().out
    assert result.error_in_exec is None
    assert "drew batches from the generator given to fit" in out
    assert "cannot be rewound" in out


def test_a_generator_the_cell_makes_is_made_afresh_by_each_probe(keras_shell, capsys):
    result = keras_shell.run_cell(MADE_AFRESH)
    out = capsys.readouterr().out
    ns = keras_shell.user_ns
    assert result.error_in_exec is None
    assert 0.9 * LIMIT <= ns["BATCH"] <= LIMIT
    assert int(ns["model"].optimizer.iterations) == steps(ns["BATCH"], epochs=1)
    assert "cannot be rewound" not in out


def test_a_custom_loop_is_searched_by_whole_runs_and_the_card_says_why(keras_shell, capsys):
    result = keras_shell.run_cell(
        "%%gpuguard --find-max\n"
        "BATCH = 64\n"
        "runs = globals().get('runs', 0) + 1\n"
        "for start in range(0, 256, BATCH):\n"
        "    model.train_on_batch(x[start:start + BATCH], y[start:start + BATCH])\n"
    )
    out = capsys.readouterr().out
    ns = keras_shell.user_ns
    assert result.error_in_exec is None
    assert "Each size was a whole run" in out
    assert "probe:" not in out  # not even the first run: it had no fit to end
    assert ns["runs"] > 2  # whole runs, as before


def test_a_stop_during_a_probe_ends_the_search_and_puts_the_model_back(keras_shell, capsys):
    before = [w.copy() for w in keras_shell.user_ns["model"].get_weights()]
    result = keras_shell.run_cell(STOPPED_AT_128)
    captured = capsys.readouterr()
    ns = keras_shell.user_ns

    assert "retry: batch size 256" not in captured.out  # no size after the Stop
    # The cell ends interrupted, as without the guard; not with the probe's end of its first run.
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    assert int(ns["model"].optimizer.iterations) == 0  # nothing trained stays trained
    assert all(np.array_equal(a, b) for a, b in zip(before, ns["model"].get_weights(), strict=True))


def test_a_stop_during_a_whole_run_of_a_search_ends_the_cell_interrupted(keras_shell, capsys):
    """A custom loop's search runs whole: its first run fitted, and a Stop in a later one left
    the namespace as that run had got it. The cell must not end as a success."""
    result = keras_shell.run_cell(
        "%%gpuguard --find-max\n"
        "import os, signal\n"
        "BATCH = 64\n"
        "if BATCH == 128:\n"
        "    os.kill(os.getpid(), signal.SIGINT)  # the Stop button, in the search's second run\n"
        "for start in range(0, 256, BATCH):\n"
        "    model.train_on_batch(x[start:start + BATCH], y[start:start + BATCH])\n"
    )
    assert "retry: batch size 256" not in capsys.readouterr().out  # no size after the Stop
    assert isinstance(result.error_in_exec, KeyboardInterrupt)


def test_gpuguard_retry_keeps_to_out_of_memory_cards_and_max_reaches_the_search(keras_shell):
    """A search card is no cell that ran out of memory: ``%gpuguard retry N`` does not rerun
    it, and ``%gpuguard retry max`` finds it (its search is over, and says so)."""
    from IPython.core.error import UsageError

    result = keras_shell.run_cell(
        "%%gpuguard --find-max\n"
        "BATCH = 256\n"
        "model.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)\n"
    )
    assert result.error_in_exec is None
    with pytest.raises(UsageError, match="no guarded cell has run out of memory with"):
        keras_shell.run_line_magic("gpuguard", "retry 16")
    with pytest.raises(UsageError, match=r"batch size \d+ is the largest that fits"):
        keras_shell.run_line_magic("gpuguard", "retry max")


def test_a_stop_in_the_guards_finish_keeps_the_search_from_starting(keras_shell, capsys):
    """A Stop that lands while the guard finishes the cell's own run (before the search) is
    held until that step is done, then honoured: no search runs, the cell ends interrupted,
    and the model is as that run left it."""
    import os
    import signal

    session = keras_shell.magics_manager.registry["GPUGuardMagics"].session
    end = session.end

    def end_with_a_stop(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)  # the Stop button, in the middle of the finish
        return end(*args, **kwargs)

    session.end = end_with_a_stop
    try:
        result = keras_shell.run_cell(
            "%%gpuguard --find-max\n"
            "BATCH = 64\n"
            "model.fit(x, y, batch_size=BATCH, epochs=2, shuffle=False, verbose=0)\n"
        )
    finally:
        del session.end
    out = capsys.readouterr().out
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    assert "retry:" not in out  # no size measured, no run after
    assert int(keras_shell.user_ns["model"].optimizer.iterations) == steps(64)


#: A guarded search from ``start``: the person's training of ``MODEL``.
SEARCH_FROM = (
    "%%gpuguard --find-max\n"
    "BATCH = {start}\n"
    "model.fit(x, y, batch_size=BATCH, epochs=2, shuffle=False, verbose=0)\n"
)

#: The model of ``MODEL``, its training step counting its traces (Python in ``train_step``
#: runs only while TensorFlow traces it).
COUNTED = MODEL.replace("model = keras.Sequential([", "model = Counted([").replace(
    "keras.utils.set_random_seed(0)\n",
    "keras.utils.set_random_seed(0)\n"
    "traces = []\n"
    "class Counted(keras.Sequential):\n"
    "    def train_step(self, data):\n"
    "        traces.append(keras.ops.shape(data[0])[0])\n"
    "        return super().train_step(data)\n",
)


def test_a_search_from_a_size_that_fits_reuses_the_models_traces(keras_shell):
    """The guard's measurements train with the model's own step function: its traces serve
    them and the last run. Step functions of the guard's own were traced twice more."""
    assert keras_shell.run_cell(COUNTED).success
    result = keras_shell.run_cell(SEARCH_FROM.format(start=64))
    ns = keras_shell.user_ns
    assert result.error_in_exec is None
    assert 0.9 * LIMIT <= ns["BATCH"] <= LIMIT
    # The cell's run at 64 (its one shape: 64 divides the data), then one trace for any size.
    assert len(ns["traces"]) == 2, ns["traces"]


def test_a_search_after_a_failure_retraces_the_models_step_function_once(keras_shell):
    """The cell's run fails and the guard clears Keras' session: the measurements retrace the
    model's own step function, once for any size, and the last run reuses it."""
    assert keras_shell.run_cell(COUNTED).success
    result = keras_shell.run_cell(SEARCH_FROM.format(start=1024))
    ns = keras_shell.user_ns
    assert result.error_in_exec is None
    assert 0.9 * LIMIT <= ns["BATCH"] <= LIMIT
    assert len(ns["traces"]) == 2, ns["traces"]  # the cell's run at 1024, then any size


#: ``COUNTED`` with its cliff's noise unseeded: drawn from Keras' global seed generator, a
#: variable that the step's first trace makes.
UNSEEDED = COUNTED.replace("seed=self.seed)", "seed=None)")


def test_a_model_with_an_unseeded_random_op_is_searched_after_the_guards_clear(keras_shell):
    """The guard's clear of Keras' session keeps its global seed generator: dropped, a retrace
    of the model's step function, traced before, would make it again ("Creating variables on
    a non-first call to a function decorated with tf.function")."""
    assert keras_shell.run_cell(UNSEEDED).success
    result = keras_shell.run_cell(SEARCH_FROM.format(start=1024))
    ns = keras_shell.user_ns
    assert result.error_in_exec is None
    assert 0.9 * LIMIT <= ns["BATCH"] <= LIMIT
    assert int(ns["model"].optimizer.iterations) == steps(ns["BATCH"])


def test_a_model_with_an_unseeded_random_op_is_retried_whole_after_the_guards_clear(
    keras_shell, capsys
):
    """The same for a retry by whole runs, and for the person's own next ``fit``: each ran the
    model's step function at a new size after the guard's clear, and failed "not for memory"."""
    assert keras_shell.run_cell(UNSEEDED).success
    result = keras_shell.run_cell(
        "%%gpuguard --auto-retry\n"
        "BATCH = 1024\n"
        "model.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)\n"
    )
    assert result.error_in_exec is None, capsys.readouterr().out
    assert keras_shell.user_ns["BATCH"] <= LIMIT
    assert keras_shell.run_cell("model.fit(x, y, batch_size=100, epochs=1, verbose=0)").success


def test_a_probes_fixed_part_is_what_the_allocator_holds_after_it_not_the_gradients():
    """The search's line is the forecast's: what stays held after the probe's steps is the part
    that does not grow with the batch, and the gradients (16 MiB here) are not added to it."""
    model = keras.Sequential(
        [keras.Input((2048,)), keras.layers.Dense(2048), keras.layers.Dense(1)]
    )
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.zeros((64, 2048), np.float32), np.zeros((64, 1), np.float32)
    call = FitCall.of(model, {"x": x, "y": y})
    assert call is not None
    readings = PeakReader(reset=lambda: None, read=lambda: 40 * 2**20, held=lambda: 17 * 2**20)
    measurer = Measurer(readings, lambda error, outcome: outcome, nullcontext, nullcontext)
    outcome = measurer.measure(call, 16)
    assert outcome.finished
    assert (outcome.peak_bytes, outcome.fixed_bytes) == (40 * 2**20, 17 * 2**20)


def test_a_stop_in_ipythons_own_steps_of_the_searchs_last_run_ends_the_cell_interrupted(
    keras_shell, capsys
):
    """A Stop can land in IPython's own steps of a run, before the cell's code: its transform
    of the cell does not catch ``KeyboardInterrupt``, so it leaves ``run_cell`` itself. In the
    search's last whole run, the model was already put back for that run; the cell must end
    interrupted with the model as before it, not as a success that trained nothing."""
    import os
    import signal

    before = [w.copy() for w in keras_shell.user_ns["model"].get_weights()]

    def stop() -> None:
        os.kill(os.getpid(), signal.SIGINT)  # the Stop button, as IPython transforms the cell

    result = searched_from_64_with(keras_shell, stop)
    out = capsys.readouterr().out
    ns = keras_shell.user_ns
    assert "probe: fits" in out  # the Stop came in the last whole run, after the probes
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    assert int(ns["model"].optimizer.iterations) == 0  # nothing trained stays trained
    assert all(np.array_equal(a, b) for a, b in zip(before, ns["model"].get_weights(), strict=True))


def sigint_on_first_call(function):
    """``function`` that sends SIGINT, as the Stop button does, as it is first called."""
    import os
    import signal

    calls = []

    def stopping(*args, **kwargs):
        if not calls:
            os.kill(os.getpid(), signal.SIGINT)
        calls.append(1)
        return function(*args, **kwargs)

    return stopping


def test_a_stop_as_a_probe_keeps_the_model_ends_the_search_there(keras_shell, capsys, monkeypatch):
    """The Stop lands while the guard keeps the model before its first probe, in a hold inside
    the hold of the whole finish: no probe and no run follow, and the cell ends interrupted
    with the model as its own run left it."""
    import types

    from ipy_gpuguard.retry import measure

    kept_by_a_probe = types.SimpleNamespace(of=sigint_on_first_call(measure.KeptState.of))
    monkeypatch.setattr(measure, "KeptState", kept_by_a_probe)
    result = keras_shell.run_cell(SEARCH_FROM.format(start=64))
    out = capsys.readouterr().out
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    assert "probe: fits" not in out
    assert int(keras_shell.user_ns["model"].optimizer.iterations) == steps(64)


def test_a_stop_as_the_last_run_puts_the_model_back_keeps_that_run_from_starting(
    keras_shell, capsys, monkeypatch
):
    from ipy_gpuguard.retry import probe

    before = [w.copy() for w in keras_shell.user_ns["model"].get_weights()]
    restore = probe.BeforeTheSearch.restore
    monkeypatch.setattr(probe.BeforeTheSearch, "restore", sigint_on_first_call(restore))
    result = keras_shell.run_cell(SEARCH_FROM.format(start=64))
    out = capsys.readouterr().out
    ns = keras_shell.user_ns
    assert "probe: fits" in out  # the probes ran, then the Stop came
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    assert int(ns["model"].optimizer.iterations) == 0  # no whole run at the size found
    assert all(np.array_equal(a, b) for a, b in zip(before, ns["model"].get_weights(), strict=True))


def test_a_keyboard_interrupt_raised_in_ipythons_steps_of_a_run_ends_the_search(
    keras_shell, capsys
):
    """Not only a signal: a ``KeyboardInterrupt`` raised in IPython's own steps of the search's
    last run (here by an input transformer) stops it like the Stop button, not as a size that
    failed, after which the search tried another."""

    def interrupt() -> None:
        raise KeyboardInterrupt

    result = searched_from_64_with(keras_shell, interrupt)
    out = capsys.readouterr().out
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    assert len(re.findall(r"retry: batch size \d+: (?!probe)", out)) <= 1  # no run after it
    assert int(keras_shell.user_ns["model"].optimizer.iterations) == 0


def searched_from_64_with(shell, act):
    """The search from batch 64, ``act`` called in IPython's transform of each of the search's
    whole runs at another size (before their code), as an input transformer is."""

    def transform(lines: list[str]) -> list[str]:
        if any(line.startswith("BATCH = ") and line != "BATCH = 64\n" for line in lines):
            act()
        return lines

    shell.input_transformers_post.append(transform)
    try:
        return shell.run_cell(SEARCH_FROM.format(start=64))
    finally:
        shell.input_transformers_post.remove(transform)
