"""The watchdog on real Keras ``fit`` calls in a real IPython shell (acceptance of the watchdog).

The shell has no kernel, so the panel ends as a text summary and the card prints; the live card
inside a kernel is tested in ``tests/kernel/test_kernel_watchdog.py``.
"""

from __future__ import annotations

import pytest

from ipy_gpuguard.watchdog import RAISED, SystemTimeoutProbe

from .conftest import guard_magics, guard_threads
from .watch_cells import GENERATOR, SLOW_FIRST_STEP
from .watchdog.fakes import NVML_DRIVER_WDDM, fake_nvml


@pytest.fixture
def keras_shell(shell):
    assert shell.run_cell(GENERATOR).success
    return shell


def last_run(shell):
    run = guard_magics(shell).session.last_run
    assert run is not None
    return run


def test_a_blocked_generator_is_reported_in_time_with_its_frame_and_interrupted(
    keras_shell, capsys
):
    result = keras_shell.run_cell(
        "%%gpuguard --timeout 2 --on-hang interrupt --interval 0.5\n"
        "model.fit(batches(block_after=3), steps_per_epoch=50, epochs=1, verbose=0)"
    )

    assert "WatchdogInterrupt" in str(result.error_in_exec)  # TensorFlow's error wraps it
    watchdog = last_run(keras_shell).watchdog
    stall = watchdog.stall
    assert stall is not None
    assert stall.steps == 3
    assert 2.0 <= stall.detected_at - stall.started_at <= 2.0 + 0.5
    (worker,) = [thread for thread in stall.where.threads if not thread.is_main]
    assert worker.run_by_library
    assert worker.user_frames[-1].function == "batches"
    assert worker.user_frames[-1].code == "time.sleep(0.05)"
    assert watchdog.interrupt is not None
    assert watchdog.interrupt.stage == RAISED
    assert "batches()" in watchdog.interrupt.target
    printed = capsys.readouterr().out
    assert "Stopped by the watchdog [hang.watchdog.interrupted]" in printed
    assert "in batches: time.sleep(0.05)" in printed
    assert "Last step times before the failure" in printed
    assert guard_threads() == []


def test_steps_of_half_a_second_are_no_stall_under_a_two_second_timeout(keras_shell):
    result = keras_shell.run_cell(
        "%%gpuguard --timeout 2\n"
        "history = model.fit(batches(step_s=0.5), steps_per_epoch=6, epochs=1, verbose=0)"
    )

    assert result.success
    run = last_run(keras_shell)
    assert run.watchdog.stalls == ()
    progress = run.steps.snapshot()
    assert progress.steps == 6
    assert progress.median_step_s == pytest.approx(0.5, abs=0.15)


def test_a_first_step_that_compiles_longer_than_the_timeout_is_no_stall(keras_shell):
    assert keras_shell.run_cell(SLOW_FIRST_STEP.format(seconds=3)).success
    result = keras_shell.run_cell(
        "%%gpuguard --timeout 2\n"
        "import numpy as np\n"
        "slow_model.fit(np.zeros((64, 4)), np.zeros((64, 1)), batch_size=8, verbose=0)"
    )

    assert result.success
    run = last_run(keras_shell)
    assert run.watchdog.stalls == ()
    assert run.steps.snapshot().steps == 8
    assert run.view().elapsed_s > 3.0  # the first step did outlast the timeout


def test_steps_near_a_windows_gpus_timeout_are_warned_of(keras_shell, capsys):
    session = guard_magics(keras_shell).session
    session.timeout_probe = SystemTimeoutProbe(
        platform="win32",
        read_registry=lambda: {"TdrDelay": 2},
        nvml=fake_nvml(NVML_DRIVER_WDDM, display_active=True),
    )
    result = keras_shell.run_cell(
        "%%gpuguard\nmodel.fit(batches(step_s=1.2), steps_per_epoch=3, epochs=1, verbose=0)"
    )

    assert result.success
    printed = capsys.readouterr().out
    assert "steps take 1.2 s; this GPU is reset after 2 s" in printed
    assert "WDDM GPU and drives a display" in printed
    assert "Switch the GPU to TCC mode (Windows)" in printed
    assert "Lengthen the Windows GPU timeout (advanced)" in printed
    assert last_run(keras_shell).watchdog.stalls == ()


def heartbeats_in(shell, cell_prefix=""):
    assert shell.run_cell(cell_prefix + "made = keras.callbacks.CallbackList([])").success
    return [type(cb).__name__ for cb in shell.user_ns["made"].callbacks].count("HeartbeatCallback")


def test_keras_reports_steps_in_guarded_cells_only_and_is_put_back(keras_shell):
    import keras

    init = keras.callbacks.CallbackList.__init__
    assert heartbeats_in(keras_shell, "%%gpuguard\n") == 1
    assert keras.callbacks.CallbackList.__init__ is init
    assert keras_shell.run_cell("%%gpuguard\nraise ValueError('mid-cell')").error_in_exec
    assert keras.callbacks.CallbackList.__init__ is init
    assert heartbeats_in(keras_shell) == 0


LIST_OF_THEIRS = """
class Callbacks(list):
    iterated = 0
    def __iter__(self):
        Callbacks.iterated += 1
        return super().__iter__()
"""


def test_a_list_of_callbacks_of_the_persons_reaches_keras_as_without_the_guard(keras_shell):
    """A ``list`` subclass of theirs: the guard never iterates it, and Keras holds the same
    callbacks with the heartbeat beside them as it holds without the guard."""
    assert keras_shell.run_cell(LIST_OF_THEIRS).success
    made = "made = keras.callbacks.CallbackList(Callbacks([keras.callbacks.History()]))"
    held = []
    for prefix in ("", "%%gpuguard\n"):
        assert keras_shell.run_cell(prefix + made).success
        held.append([type(each).__name__ for each in keras_shell.user_ns["made"].callbacks])
    assert held[1] == [*held[0], "HeartbeatCallback"]
    assert keras_shell.user_ns["Callbacks"].iterated == 0


COUNTED_MODEL = """
class Counted(keras.Sequential):
    asked = 0
    def __bool__(self):
        Counted.asked += 1
        return True

counted = Counted([keras.Input((4,)), keras.layers.Dense(1)])
counted.compile("sgd", "mse")
"""


def test_the_heartbeat_asks_nothing_of_the_persons_model(keras_shell):
    """Keras asks a model's truth as it hands it to its callbacks; the guard's heartbeat had asked
    it once more, running a ``__bool__`` of the person's."""
    assert keras_shell.run_cell(COUNTED_MODEL).success
    fit = "counted.fit(np.zeros((16, 4)), np.zeros((16, 1)), batch_size=8, verbose=0)\n"
    asked = []
    for prefix in ("", "%%gpuguard\n"):
        keras_shell.user_ns["Counted"].asked = 0
        assert keras_shell.run_cell(prefix + fit).success
        asked.append(keras_shell.user_ns["Counted"].asked)
    assert asked[1] == asked[0]


CALLBACK_FORMS = """
import collections, json, sys
sys.path.insert(0, {root!r})
import keras
from ipy_gpuguard.watchdog.keras_hooks import KerasHooks
from ipy_gpuguard.watchdog.progress import StepRecorder

Pair = collections.namedtuple("Pair", "first second")
class Listed(list):
    pass

def forms():
    history, stop = keras.callbacks.History(), keras.callbacks.EarlyStopping()
    return {{
        "none": None, "one": history, "list": [history], "tuple": (history, stop),
        "empty": [], "nested": [[history], stop], "named tuple": Pair(history, stop),
        "dict": {{"b": history, "a": stop}}, "list subclass": Listed([history]),
    }}

def made(callbacks):
    try:
        made = keras.callbacks.CallbackList(callbacks, add_history=True, model=None, epochs=1)
    except Exception as error:
        return type(error).__name__
    kinds = [type(each).__name__ for each in made.callbacks if type(each).__name__ != "HeartbeatCallback"]
    beats = [each for each in made.callbacks if type(each).__name__ == "HeartbeatCallback"]
    return [kinds, made._async_train, [beat.params for beat in beats]]

alone = {{name: made(callbacks) for name, callbacks in forms().items()}}
hooks = KerasHooks(StepRecorder())
hooks.attach_new()
guarded = {{name: made(callbacks) for name, callbacks in forms().items()}}
hooks.detach()
print("FORMS", json.dumps({{"alone": alone, "guarded": guarded}}))
"""


@pytest.mark.tensorflow
def test_every_form_of_callbacks_reaches_keras_on_jax_as_without_the_guard():
    """Keras 3 on JAX reads the top level of the ``callbacks`` argument (whether each may be
    called on another thread): a named tuple or a dict of the person's, held beside the
    heartbeat, had failed the fit, and a single callback's calls had lost their thread (helper
    21). The heartbeat now joins the list Keras made of theirs, told the fit's parameters."""
    from .retry.test_compiled_step import printed_on_jax

    forms = printed_on_jax(CALLBACK_FORMS, "FORMS")
    for name, alone in forms["alone"].items():
        guarded = forms["guarded"][name]
        if isinstance(alone, str):  # Keras fails it without the guard: the same failure
            assert guarded == alone, name
            continue
        kinds, asynchronous, _ = alone
        assert guarded == [kinds, asynchronous, [{"epochs": 1}]], name


def test_a_cell_that_imports_keras_itself_still_reports_steps(shell, monkeypatch):
    """The watchdog attaches to a Keras imported during the cell, at its next look."""
    import sys

    for name in [name for name in sys.modules if name == "keras" or name.startswith("keras.")]:
        monkeypatch.delitem(sys.modules, name)
    result = shell.run_cell(
        "%%gpuguard --interval 0.1\n"
        "import time, numpy as np, keras\n"
        "time.sleep(0.3)\n"
        "model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])\n"
        "model.compile('sgd', 'mse')\n"
        "model.fit(np.zeros((32, 4)), np.zeros((32, 1)), batch_size=8, verbose=0)"
    )
    assert result.success
    assert last_run(shell).steps.snapshot().steps == 4


def test_a_fit_right_after_the_cells_own_import_of_keras_reports_steps(shell, monkeypatch):
    """Issue 24: a fit that began before the watchdog's next look went unwatched (on the JAX
    stack, 0 steps of 8): the import itself now attaches the heartbeat."""
    import sys

    for name in [name for name in sys.modules if name == "keras" or name.startswith("keras.")]:
        monkeypatch.delitem(sys.modules, name)
    result = shell.run_cell(
        "%%gpuguard --interval 30\n"  # the watchdog does not look again during the cell
        "import numpy as np, keras\n"
        "model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])\n"
        "model.compile('sgd', 'mse')\n"
        "model.fit(np.zeros((32, 4)), np.zeros((32, 1)), batch_size=8, verbose=0)"
    )
    assert result.success
    assert last_run(shell).steps.snapshot().steps == 4
    assert not any("AttachWhenImported" in type(finder).__name__ for finder in sys.meta_path)


def test_a_stall_in_a_terminal_is_one_line_when_it_is_found(keras_shell, capsys):
    """Issue 35 item 15: a ``fit`` waiting on a stuck generator sat ten minutes in a terminal
    with nothing printed. The line says where it waits and what to do, once per stall."""
    import sys
    import time

    said = []

    class Stamped:
        """stderr, with the time each line came."""

        def write(self, text):
            said.append((time.monotonic(), text))
            return len(text)

        def flush(self):
            pass

    began = time.monotonic()
    stderr, sys.stderr = sys.stderr, Stamped()
    try:
        result = keras_shell.run_cell(
            "%%gpuguard --timeout 2 --interval 0.5\n"
            "model.fit(batches(block_after=3, block_s=5), steps_per_epoch=6, epochs=1, verbose=0)"
        )
    finally:
        sys.stderr = stderr
    ended = time.monotonic()
    assert result.success
    lines = [(at, text) for at, text in said if text.startswith("ipy_gpuguard: No progress")]
    assert len(lines) == 1, said
    at, line = lines[0]
    assert at - began < ended - began - 1  # said while the cell still waited
    assert "after step 3 of fit" in line
    assert "running your code, waits at" in line
    assert "in batches: time.sleep(0.05)" in line
    assert "--on-hang interrupt" in line
    assert "\n" not in line.rstrip("\n")
