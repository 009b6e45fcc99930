"""The memory forecast of a guarded fit, in a real shell with real Keras (TensorFlow on the CPU,
its allocator standing for the simulated GPU's): made from the first steps, shown in the panel,
given by ``%gpuguard forecast`` as words and as data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from IPython.core.error import UsageError

from ipy_gpuguard.retry.fit_forecast import MEASURED_AFTER, fit_batch_size

ROOT = Path(__file__).parent.parent.parent

FIT_ON_ARRAYS = """\
import numpy as np, keras
x = np.random.rand(512, 64).astype("float32")
y = np.random.randint(0, 10, 512)
model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(256, activation="relu"),
                          keras.layers.Dense(10)])
model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x, y, batch_size=64, epochs=2, verbose=0)
"""


SCRIPT = """
import json, sys
sys.path.insert(0, {root!r})
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "ipy_gpuguard")
shell.run_cell("%%gpuguard --interval 0.05\\n" + {cell!r})
print("FORECAST-JSON", json.dumps(shell.run_line_magic("gpuguard", "forecast --json")))
shell.run_line_magic("gpuguard", "forecast")
"""


@pytest.mark.tensorflow
def test_a_guarded_fit_on_arrays_leaves_a_measured_forecast():
    """A fresh process, so that TensorFlow's CPU allocator keeps statistics (BFC on): its peak
    stands for the simulated GPU's allocator."""
    env = {
        **os.environ,
        "GPUGUARD_SIMULATE": "8GiB",
        "TF_CPU_ALLOCATOR_USE_BFC": "true",
        "TF_ENABLE_ONEDNN_OPTS": "0",
        "KERAS_BACKEND": "tensorflow",
    }
    cell = FIT_ON_ARRAYS.replace("512", "600").replace(
        "verbose=0", "verbose=0, validation_split=0.2"
    )
    script = textwrap.dedent(SCRIPT).format(root=str(ROOT), cell=cell)
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=240
    )
    (line,) = [line for line in run.stdout.splitlines() if line.startswith("FORECAST-JSON ")]
    data = json.loads(line.removeprefix("FORECAST-JSON "))
    assert data is not None, run.stdout[-2000:] + run.stderr[-2000:]
    assert data["basis"] == "measured"
    assert data["batch_size"] == 64
    assert data["of_last_guarded_cell"] is True
    assert data["step"] >= MEASURED_AFTER
    assert data["capacity_bytes"] == 8 << 30  # the simulated GPU's
    assert data["peak_bytes"] > 0
    # a small model on 8 GiB: its line reaches past the 480 samples the fit trains on (600, a fifth set aside)
    assert (data["largest_batch"], data["every_sample_fits"]) == (480, True)
    assert not data["beyond_reach"]
    summary = run.stdout[: run.stdout.index("FORECAST-JSON")]
    assert "Forecast (measured" in summary
    told = "at batch 64; a batch of every sample it trains on (480) fits"
    assert told in run.stdout[run.stdout.index("FORECAST-JSON") :]


OWN_LAYER_ON_JAX = """
import json, sys
sys.path.insert(0, {root!r})
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "ipy_gpuguard")
shell.run_cell('''
import numpy as np, keras
calls = []
class Counted(keras.layers.Layer):
    def call(self, x):
        calls.append(x.shape)  # runs each time Keras (or anyone) traces the step
        return x
x = np.zeros((256, 8), "float32")
y = np.zeros((256, 1), "float32")
def fitted():
    model = keras.Sequential([keras.Input((8,)), Counted(), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    model.fit(x, y, batch_size=64, epochs=1, verbose=0)
fitted()
unguarded = len(calls)
calls.clear()
''')
shell.run_cell("%%gpuguard --interval 0.1\\nfitted()")
print("CALLS", shell.user_ns["unguarded"], len(shell.user_ns["calls"]))
print("FORECAST-JSON", json.dumps(shell.run_line_magic("gpuguard", "forecast --json")))
"""


@pytest.mark.tensorflow
def test_on_jax_the_persons_own_layer_is_never_traced_for_a_forecast():
    """Lowering the step runs every layer's ``call``: with a layer of the person's, the guard
    makes no compiled forecast, and their code runs exactly as often as without the guard."""
    env = {**os.environ, "GPUGUARD_SIMULATE": "64MiB", "KERAS_BACKEND": "jax"}
    script = textwrap.dedent(OWN_LAYER_ON_JAX).format(root=str(ROOT))
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=240
    )
    (line,) = [line for line in run.stdout.splitlines() if line.startswith("CALLS ")]
    unguarded, guarded = line.removeprefix("CALLS ").split()
    assert guarded == unguarded, run.stderr[-2000:]
    assert "FORECAST-JSON null" in run.stdout


@pytest.mark.tensorflow
def test_a_fit_on_data_that_batches_itself_has_no_forecast_and_says_why(shell, capsys):
    cell = FIT_ON_ARRAYS.replace(
        "model.fit(x, y, batch_size=64, epochs=2, verbose=0)",
        "def batches():\n"
        "    while True:\n"
        "        yield x[:64], y[:64]\n"
        "model.fit(batches(), steps_per_epoch=4, epochs=1, verbose=0, shuffle=False)",
    )
    guard = shell.magics_manager.registry["GPUGuardMagics"]
    guard.session.last_forecast = None
    shell.run_cell("%%gpuguard --interval 0.05\n" + cell)
    capsys.readouterr()
    assert shell.run_line_magic("gpuguard", "forecast --json") is None
    shell.run_line_magic("gpuguard", "forecast")
    said = capsys.readouterr().out
    assert "No forecast for the last guarded fit: its data batches itself" in said
    assert "give fit arrays and batch_size" in said


@pytest.mark.tensorflow
def test_a_forecast_the_guard_failed_to_make_is_said_in_one_line_not_the_last_cells(
    shell, capsys, monkeypatch
):
    """The guard's own error stops the forecast of this cell's fit: the command then says so,
    never the forecast of an earlier cell as though it were this fit's."""
    from ipy_gpuguard.record.forecast import Basis, Forecast, KeptForecast
    from ipy_gpuguard.shell.guarded_run import GuardedRun

    guard = shell.magics_manager.registry["GPUGuardMagics"]
    earlier = Forecast(16, 2**20, 8 << 30, 4096, Basis.MEASURED, 2)
    guard.session.last_forecast = KeptForecast(earlier, execution_count=1)

    def fails(run: GuardedRun) -> None:
        raise ValueError("the bindings misread the device\nsecond line of the message")

    monkeypatch.setattr(GuardedRun, "capacity", fails)
    assert shell.run_cell("%%gpuguard --interval 0.05\n" + FIT_ON_ARRAYS).success
    capsys.readouterr()
    assert shell.run_line_magic("gpuguard", "forecast --json") is None
    shell.run_line_magic("gpuguard", "forecast")
    said = capsys.readouterr().out
    assert said == (
        "No forecast for the last guarded fit: the guard's forecast stopped "
        "(ValueError: the bindings misread the device).\n"
    )


UNSEEN_FIT = """
import json, sys
sys.path.insert(0, {root!r})
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "ipy_gpuguard")
shell.run_cell({setup!r}, store_history=True)
shell.run_cell("%%gpuguard --interval 0.05\\nmodel.fit" + {fit!r}, store_history=True)
print("FITTED", shell.execution_count - 1)
shell.run_cell("listed = keras.callbacks.CallbackList([], model=model, add_history=True)",
               store_history=True)
shell.run_cell("%%gpuguard --interval 0.05\\n"
               "model.fit(x, y, batch_size=128, epochs=1, verbose=0, callbacks=listed)",
               store_history=True)
print("FORECAST-JSON", json.dumps(shell.run_line_magic("gpuguard", "forecast --json")))
shell.run_line_magic("gpuguard", "forecast")
shell.run_cell("%%gpuguard --interval 0.05\\n"
               "before = %gpuguard forecast --json\\n"
               "model.fit(x, y, batch_size=48, epochs=1, verbose=0)\\n"
               "after = %gpuguard forecast --json", store_history=True)
print("INSIDE", json.dumps([
    None if asked is None else [asked["batch_size"], asked["of_last_guarded_cell"]]
    for asked in (shell.user_ns["before"], shell.user_ns["after"])
]))
"""


@pytest.mark.tensorflow
def test_a_fit_the_guard_did_not_see_is_not_given_an_earlier_cells_forecast():
    """A ``CallbackList`` built before the cell is used by ``fit`` as given, without the
    guard's heartbeat: the guard sees no fit. The last forecast then says whose it is, never
    passing as this cell's (it was given as the fit's at batch 64 under a fit at 128)."""
    env = {
        **os.environ,
        "GPUGUARD_SIMULATE": "8GiB",
        "TF_CPU_ALLOCATOR_USE_BFC": "true",
        "TF_ENABLE_ONEDNN_OPTS": "0",
        "KERAS_BACKEND": "tensorflow",
    }
    setup, fit = FIT_ON_ARRAYS.rsplit("model.fit", 1)
    script = textwrap.dedent(UNSEEN_FIT).format(root=str(ROOT), setup=setup, fit=fit)
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=240
    )
    out = run.stdout
    fitted = int(out.split("FITTED ", 1)[1].split()[0]) if "FITTED " in out else None
    (line,) = [line for line in out.splitlines() if line.startswith("FORECAST-JSON ")]
    data = json.loads(line.removeprefix("FORECAST-JSON "))
    assert data is not None, out[-2000:] + run.stderr[-2000:]
    assert (data["batch_size"], data["execution_count"]) == (64, fitted)
    assert data["of_last_guarded_cell"] is False
    said = out[out.index("FORECAST-JSON") :].splitlines()[1:]
    assert said[0] == (
        "The last guarded cell ran no fit the guard saw (a fit that failed before its first "
        "step, or one given a CallbackList built before its cell, is not seen); the last "
        f"guarded fit is of In [{fitted}]:"
    )
    assert said[1].startswith("Forecast (measured, at step 2): peak ")
    # asked inside a later guarded cell: the earlier forecast is not that cell's, before its
    # fit; after it, the cell's own (none yet where its steps were not read in time)
    (line,) = [line for line in out.splitlines() if line.startswith("INSIDE ")]
    before, after = json.loads(line.removeprefix("INSIDE "))
    assert before == [64, False]
    assert after is None or after == [48, True]


def test_forecast_takes_no_value(shell):
    with pytest.raises(UsageError, match="forecast takes only --json"):
        shell.run_line_magic("gpuguard", "forecast 3")


def test_the_batch_of_a_fit_is_its_own_or_keras_default_for_arrays():
    x = np.zeros((100, 3))
    assert fit_batch_size({"x": x, "batch_size": 7}) == 7
    assert fit_batch_size({"x": x, "batch_size": None}) == 32
    assert fit_batch_size({"x": iter([x]), "batch_size": None}) is None
    assert fit_batch_size({"x": {"a": x, "b": x}}) == 32


def test_a_fit_trains_on_no_more_samples_than_it_has_and_a_dataset_on_its_own_batches():
    """Keras trains on every sample at once where ``batch_size`` is larger, and ignores it for
    a dataset: taking it as the batch put too little in each sample, and too large a batch in
    the forecast (18 times the true one for a dataset of 8 given ``batch_size=512``)."""
    x = np.zeros((40, 3))
    assert fit_batch_size({"x": x, "batch_size": 512}) == 40
    assert fit_batch_size({"x": [x, x], "batch_size": 16}) == 16
    assert fit_batch_size({"x": iter([x]), "batch_size": 512}) is None


STATE_SYNCS_ON_JAX = """
import sys
sys.path.insert(0, {root!r})
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "ipy_gpuguard")
shell.run_cell('''
import numpy as np, keras
x = np.zeros((256, 8), "float32")
y = np.zeros((256, 1), "float32")
def syncs(batch):
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    count = []
    sync = model.jax_state_sync
    model.jax_state_sync = lambda: count.append(1) or sync()
    model.fit(x, y, batch_size=batch, epochs=1, verbose=0)
    return len(count)
unguarded = [syncs(16), syncs(4)]
''')
shell.run_cell("%%gpuguard --interval 0.1\\nguarded = [syncs(16)]")
shell.run_cell("%%gpuguard --interval 0.1\\nguarded.append(syncs(4))")
print("SYNCS", *shell.user_ns["unguarded"], *shell.user_ns["guarded"])
"""


@pytest.mark.tensorflow
def test_on_jax_the_guard_never_writes_the_steps_state_into_the_model_between_steps():
    """Keras 3's ``Callback.model`` on JAX writes the running state back into the model's
    variables; called after every step by the guard, it raced the next step's donation of
    those buffers ("Buffer has been deleted or donated") and changed the person's run. The guard
    reads the model without it, as a fit begins and ends too: it adds no sync at all."""
    env = {**os.environ, "GPUGUARD_SIMULATE": "8GiB", "KERAS_BACKEND": "jax"}
    script = textwrap.dedent(STATE_SYNCS_ON_JAX).format(root=str(ROOT))
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=240
    )
    (line,) = [line for line in run.stdout.splitlines() if line.startswith("SYNCS ")]
    plain_16, plain_64, guarded_16, guarded_64 = map(int, line.removeprefix("SYNCS ").split())
    assert (guarded_16, guarded_64) == (plain_16, plain_64), line
