"""The forecast never speaks of what is not the fit's, nor into what is the person's: in a real
shell with real Keras (TensorFlow's BFC allocator on the CPU standing for a simulated GPU; Keras
on JAX), cells a hostile user would write."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parent.parent.parent

#: A real shell in a process of its own, the extension loaded.
SHELL = """
import io, json, os, sys, contextlib
sys.path.insert(0, {root!r})
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "ipy_gpuguard")
"""


def said_in_a_shell(cells: str, tag: str, **env: str) -> Any:
    """Run ``cells`` after :data:`SHELL` with ``env``; the JSON the script printed after ``tag``."""
    script = textwrap.dedent(SHELL).format(root=str(ROOT)) + textwrap.dedent(cells)
    run = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=300,
    )
    lines = [line for line in run.stdout.splitlines() if line.startswith(f"{tag} ")]
    assert lines, run.stdout[-3000:] + run.stderr[-3000:]
    return json.loads(lines[0].removeprefix(f"{tag} "))


CELLS_ON_TENSORFLOW = """
shell.run_cell('''
import numpy as np, keras, tensorflow as tf
x = np.random.rand(1024, 64).astype("float32")
y = np.random.randint(0, 10, 1024)
def model(width=256):
    m = keras.Sequential([keras.Input((64,)), keras.layers.Dense(width, activation="relu"),
                          keras.layers.Dense(10)])
    m.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m
texts = tf.constant([" ".join(["w%d" % (i % 50)] * (4 + i % 7 + 60 * (i % 97 == 0)))
                     for i in range(1024)])
vectorize = keras.layers.TextVectorization(max_tokens=64)
vectorize.adapt(texts)
def text_model():
    words = keras.Input((), dtype="string")
    embedded = keras.layers.Embedding(64, 8)(vectorize(words))
    m = keras.Model(words, keras.layers.Dense(1)(keras.layers.GlobalAveragePooling1D()(embedded)))
    m.compile("adam", "mse")
    return m
def contrastive(y_true, y_pred):
    # compares every pair of a batch's samples: memory that grows with the batch's square
    z = tf.math.l2_normalize(y_pred, axis=1)
    logits = tf.matmul(z, z, transpose_b=True) / 0.1
    labels = tf.range(tf.shape(z)[0])
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
class Stream(keras.utils.PyDataset):
    # data of the person's whose shape is theirs to answer: a stream has none
    @property
    def shape(self):
        raise NotImplementedError("a stream has no shape")
    def __len__(self):
        return 4
    def __getitem__(self, index):
        return x[index * 64 : (index + 1) * 64], y[index * 64 : (index + 1) * 64]
''')
results = {}
def case(name, cell):
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        ran = shell.run_cell("%%gpuguard --interval 0.05\\n" + cell)
        shell.run_line_magic("gpuguard", "forecast")
    results[name] = {
        "ok": ran.success,
        "forecast": shell.run_line_magic("gpuguard", "forecast --json"),
        "said": said.getvalue(),
    }
case("plain", "model().fit(x, y, batch_size=64, epochs=1, verbose=0)")
case("scratch_before", "scratch = tf.random.normal((25_000_000,)); total = float(tf.reduce_sum("
     "scratch)); del scratch\\nmodel().fit(x, y, batch_size=64, epochs=1, verbose=0)")
case("plain_again", "model().fit(x, y, batch_size=64, epochs=1, verbose=0)")
case("failed_first_step", "model().fit(x, np.full(1024, 99), batch_size=16, epochs=1, verbose=0)")
case("dataset_batch_size", "model().fit(tf.data.Dataset.from_tensor_slices((x, y)).batch(8), "
     "batch_size=512, epochs=1, verbose=0)")
case("dataset_pipeline", "model().fit(tf.data.Dataset.from_tensor_slices((x, y)).shuffle(1024)"
     ".batch(64).map(lambda a, b: (a * 2, b)).prefetch(2), epochs=1, verbose=0)")
case("dataset_fewer", "model().fit(tf.data.Dataset.from_tensor_slices((x[:40], y[:40])).batch(512), "
     "epochs=3, verbose=0)")
case("generator", "def batches():\\n    while True:\\n        yield x[:64], y[:64]\\n"
     "model().fit(batches(), steps_per_epoch=4, epochs=1, verbose=0)")
case("later_fit", "model().fit(x, y, batch_size=16, steps_per_epoch=1, epochs=1, verbose=0)\\n"
     "model(2048).fit(x, y, batch_size=512, epochs=2, verbose=0)")
case("batch_16", "model().fit(x[:128], y[:128], batch_size=16, epochs=1, verbose=0)")
case("validation", "xv = np.random.rand(65536, 64).astype('float32')\\n"
     "yv = np.random.randint(0, 10, 65536)\\n"
     "model().fit(x[:128], y[:128], batch_size=16, epochs=1, validation_data=(xv, yv), verbose=0)")
case("numpy_batch", "model().fit(x, y, batch_size=np.int64(64), epochs=1, verbose=0)")
case("fewer_samples", "model().fit(x[:40], y[:40], batch_size=512, epochs=3, verbose=0)")
case("texts", "text_model().fit(texts, np.zeros(1024, 'float32'), batch_size=32, epochs=1, verbose=0)")
case("text_pipeline", "text_model().fit(tf.data.Dataset.from_tensor_slices((texts, "
     "np.zeros(1024, 'float32'))).batch(32), epochs=1, verbose=0)")
case("ragged", "rows = tf.ragged.constant([[1.0] * (1 + i % 5) for i in range(1024)])\\n"
     "ragged = keras.Sequential([keras.Input((None,), ragged=True), keras.layers.Lambda("
     "lambda r: tf.reduce_mean(r.to_tensor(), axis=1, keepdims=True)), keras.layers.Dense(1)])\\n"
     "ragged.compile('adam', 'mse')\\n"
     "ragged.fit(rows, np.zeros(1024, 'float32'), batch_size=32, epochs=1, verbose=0)")
case("contrastive", "paired = model(64)\\npaired.compile('adam', contrastive)\\n"
     "paired.fit(np.tile(x, (4, 1)), np.tile(y, 4), batch_size=256, epochs=1, verbose=0)")
case("shape_raises", "try:\\n    model().fit(Stream(), epochs=1, verbose=0)\\n"
     "except Exception as error:\\n    caught = repr(error)")
results["shape_raises"]["caught"] = shell.user_ns.get("caught")
os.environ["GPUGUARD_SIMULATE"] = "1MiB"
shell.run_line_magic("unload_ext", "ipy_gpuguard")
shell.run_line_magic("load_ext", "ipy_gpuguard")
case("redirected_stderr", "import io, contextlib\\nkept = io.StringIO()\\nwith contextlib.redirect_stderr(kept):\\n"
     "    model().fit(x, y, batch_size=512, epochs=2, verbose=0)")
results["redirected_stderr"]["persons_stream"] = shell.user_ns["kept"].getvalue()
print("RESULTS", json.dumps(results))
"""


@pytest.fixture(scope="module")
def cells() -> dict[str, Any]:
    """One real shell, the cells run in it in order, and what the guard said of each."""
    return said_in_a_shell(
        CELLS_ON_TENSORFLOW,
        "RESULTS",
        GPUGUARD_SIMULATE="256MiB",
        TF_CPU_ALLOCATOR_USE_BFC="true",
        TF_CPU_BFC_MEM_LIMIT_IN_MB="2048",
        TF_ENABLE_ONEDNN_OPTS="0",
        TF_CPP_MIN_LOG_LEVEL="3",
        KERAS_BACKEND="tensorflow",
    )


@pytest.mark.tensorflow
def test_a_tensor_the_cell_freed_before_its_fit_is_no_part_of_the_fits_forecast(cells):
    """It was: a fit that trained was said to need 352 MiB of a 256 MiB GPU."""
    assert cells["plain"]["forecast"]["basis"] == "measured"
    assert cells["plain"]["forecast"]["peak_bytes"] < 64 << 20
    scratch = cells["scratch_before"]
    assert scratch["ok"]
    assert scratch["forecast"] is None
    assert (
        "the cell used more memory before its fit than the fit's first steps did"
        in (scratch["said"])
    )
    assert "run out of memory" not in scratch["said"]


@pytest.mark.tensorflow
def test_a_fit_that_failed_at_its_first_step_is_not_given_the_last_cells_forecast(cells):
    assert cells["plain_again"]["forecast"]["batch_size"] == 64
    failed = cells["failed_first_step"]
    assert not failed["ok"]
    assert failed["forecast"] is None
    assert (
        "No forecast for the last guarded fit: it ended before its second training step"
        in (failed["said"])
    )


@pytest.mark.tensorflow
def test_a_datasets_batches_are_its_own_whatever_batch_size_says(cells):
    dataset = cells["dataset_batch_size"]
    assert dataset["ok"]
    assert dataset["forecast"]["batch_size"] == 8


@pytest.mark.tensorflow
def test_a_tf_data_pipeline_is_forecast_at_its_batch_as_arrays_are(cells):
    """A pipeline batched by ``.batch(64)`` and passed on through ``map`` and ``prefetch`` is
    forecast as the same fit on arrays in batches of 64 (it used to have no forecast at all);
    data that batches itself in code, a generator, is said to have none."""
    pipeline, arrays = cells["dataset_pipeline"], cells["plain"]
    assert pipeline["ok"]
    forecast = pipeline["forecast"]
    assert forecast["batch_size"] == 64
    assert forecast["basis"] == "measured"
    assert 0.5 < forecast["largest_batch"] / arrays["forecast"]["largest_batch"] < 2
    fewer = cells["dataset_fewer"]["forecast"]
    assert fewer["batch_size"] == 40  # its every step, as for the same arrays
    generator = cells["generator"]
    assert generator["ok"]
    assert generator["forecast"] is None
    assert "its data batches itself (a generator" in generator["said"]


@pytest.mark.tensorflow
def test_a_fit_of_fewer_samples_than_its_batch_size_is_forecast_at_the_batch_it_trains(cells):
    fewer = cells["fewer_samples"]["forecast"]
    assert fewer["batch_size"] == 40
    plain = cells["plain"]["forecast"]
    per_sample_plain = plain["peak_bytes"] / plain["batch_size"]
    assert fewer["peak_bytes"] / fewer["batch_size"] > per_sample_plain  # not 512's share


@pytest.mark.tensorflow
def test_the_guards_warning_never_lands_in_a_stream_the_person_redirected(cells):
    redirected = cells["redirected_stderr"]
    assert redirected["ok"]
    forecast = redirected["forecast"]
    assert forecast is not None
    assert forecast["peak_bytes"] > forecast["capacity_bytes"]  # the case the guard warns of
    assert redirected["persons_stream"] == ""


PIPELINE_ON_JAX = """
shell.run_cell('''
import numpy as np, keras, tensorflow as tf
model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(512, activation="relu"),
                          keras.layers.Dense(10)])
model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
data = tf.data.Dataset.range(1024).map(lambda i: (tf.random.uniform((64,)), i % 10)).batch(256)
''')
said = io.StringIO()
with contextlib.redirect_stdout(said):
    ran = shell.run_cell("%%gpuguard --interval 0.05\\nmodel.fit(data, epochs=1, verbose=0)")
    shell.run_line_magic("gpuguard", "forecast")
forecast = shell.run_line_magic("gpuguard", "forecast --json")
print("PIPELINE", json.dumps({"ok": ran.success, "forecast": forecast, "said": said.getvalue()}))
"""


@pytest.mark.tensorflow
def test_on_jax_a_pipelines_fit_is_never_measured_on_tensorflows_allocator():
    """With TensorFlow imported for ``tf.data`` beside Keras on JAX, the allocator the guard
    reads is TensorFlow's, which holds the pipeline and none of the step: a line through it
    gave a largest batch three times too large."""
    said = said_in_a_shell(
        PIPELINE_ON_JAX,
        "PIPELINE",
        GPUGUARD_SIMULATE="8GiB",
        TF_CPU_ALLOCATOR_USE_BFC="true",  # TensorFlow's allocator then says what it holds
        KERAS_BACKEND="jax",
        TF_CPP_MIN_LOG_LEVEL="3",
    )
    assert said["ok"]
    assert said["forecast"] is None
    assert "another framework's than the one Keras trains in" in said["said"]


GETATTR_ON_JAX = """
shell.run_cell('''
import numpy as np, keras
x = np.random.rand(64, 8).astype("float32")
y = np.random.rand(64, 1).astype("float32")
looked_up = []
class Mine(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(1)
        self.settings = {"units": 1}
    def call(self, x):
        return self.dense(x)
    def __getattr__(self, name):
        looked_up.append(name)
        settings = self.__dict__.get("settings")
        if settings is None or not self.__dict__.get("ready"):
            raise AttributeError(name)
        return settings[name]  # a KeyError for a name it does not know
def trained():
    model = Mine()
    model.compile("sgd", "mse")
    model.ready = True
    looked_up.clear()
    try:
        model.fit(x, y, batch_size=16, epochs=1, verbose=0)
        return ["fit", *looked_up]
    except Exception as error:
        return ["caught", type(error).__name__, *looked_up]
unguarded = trained()
''')
shell.run_cell("%%gpuguard --interval 0.05\\nguarded = trained()")
print("OUTCOMES", json.dumps([shell.user_ns["unguarded"], shell.user_ns["guarded"]]))
"""


@pytest.mark.tensorflow
def test_on_jax_the_persons_getattr_never_runs_for_the_guard():
    """The guard read ``distribute_strategy`` and Keras' ``Callback.model`` (which looks up
    ``_jax_state``) through the person's ``__getattr__``, whose ``KeyError`` their own
    ``except`` then caught: their fit failed under the guard and trained without it."""
    unguarded, guarded = said_in_a_shell(
        GETATTR_ON_JAX, "OUTCOMES", GPUGUARD_SIMULATE="8GiB", KERAS_BACKEND="jax"
    )
    assert unguarded[0] == "fit", unguarded
    assert guarded == unguarded


@pytest.mark.tensorflow
def test_a_later_fit_of_the_cell_is_not_taken_for_the_first(cells):
    """The first fit ran one step; the second's steps and peak made its forecast (11.2 MiB)."""
    later = cells["later_fit"]
    assert later["forecast"] is None
    assert "it ended before its second training step" in later["said"]


@pytest.mark.tensorflow
def test_a_validation_run_is_no_part_of_the_training_steps_peak(cells):
    """Read after the epoch, the peak held the validation's: 17.8 MiB against 484 KiB, and a
    largest batch 88 times too small."""
    validated = cells["validation"]["forecast"]
    alone = cells["batch_16"]["forecast"]
    assert validated["batch_size"] == alone["batch_size"] == 16
    assert validated["largest_batch"] > alone["largest_batch"] / 2  # the same step's


@pytest.mark.tensorflow
def test_samples_that_differ_in_size_have_no_forecast(cells):
    """A model that vectorises texts pads each batch to its longest: a batch of the rare long
    texts needs many times what the first two steps did (a forecast 13 to 54 times too large,
    checked in fresh processes, before this was refused)."""
    for name in ("texts", "text_pipeline", "ragged"):
        assert cells[name]["ok"], name
        assert cells[name]["forecast"] is None, name
        assert "its samples differ in size (texts, ragged tensors" in cells[name]["said"], name


@pytest.mark.tensorflow
def test_the_persons_data_answers_nothing_for_the_guard(cells):
    """The guard read ``shape`` of the person's ``PyDataset``: their property raised, the
    guard's error went into their ``fit`` and their ``except`` caught it."""
    streamed = cells["shape_raises"]
    assert streamed["ok"]
    assert streamed["caught"] is None
    assert "its data batches itself" in streamed["said"]


@pytest.mark.tensorflow
def test_memory_that_grows_faster_than_the_batch_is_forecast_no_further_than_its_reach(cells):
    """A contrastive loss's B×B logits: the line through batch 256 promised 241,633 under
    512 MiB, where 10,000 ran out of memory (and 7,000 trained) in fresh processes."""
    paired = cells["contrastive"]
    assert paired["ok"]
    assert paired["forecast"]["largest_batch"] == 8 * 256
    assert paired["forecast"]["beyond_reach"]
    assert "batch 2048 fits (8× this one), and more may" in paired["said"]


@pytest.mark.tensorflow
def test_a_numpy_integer_batch_is_the_batch(cells):
    assert cells["numpy_batch"]["forecast"]["batch_size"] == 64
