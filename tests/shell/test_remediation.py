"""A failed guarded cell in a real shell: the user's traceback, then the card, freed memory,
the incident log, ``%gpuguard history``; and the guard's own failure as one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ipy_gpuguard.protocol import to_json

from ..conftest import guard_magics
from ..oom_cells import keras_fit_oom
from ..protocol.validate import assert_valid

ROOT = Path(__file__).parent.parent


@pytest.fixture
def incident_log(shell, tmp_path):
    path = tmp_path / "incidents.jsonl"
    shell.run_line_magic("config", f"GPUGuard.incident_log = {str(path)!r}")
    return path


@pytest.mark.tensorflow
def test_a_real_keras_oom_shows_the_traceback_then_the_card(shell, incident_log, capsys):
    result = shell.run_cell("%%gpuguard --interval 0.1\n" + keras_fit_oom(jit_compile=False))
    out = capsys.readouterr().out
    assert type(result.error_in_exec).__name__ == "ResourceExhaustedError"
    traceback_at, card_at = out.index("ResourceExhaustedError"), out.index("[oom.tf.tensor]")
    assert traceback_at < card_at  # the card comes under the user's own traceback
    card = out[card_at:]
    assert "tensor shape" in card
    assert "[32, 1073741824]" in card
    assert "dtype                            float" in card
    assert "allocation that failed           128 GiB" in card
    assert "device                           CPU:0" in card
    assert "%debug has nothing to inspect" in card
    assert sys.last_value is None  # freed: %debug's reference is gone
    (incident,) = [json.loads(line) for line in incident_log.read_text().splitlines()]
    assert incident["rule_id"] == "oom.tf.tensor"
    assert incident["facts"]["shape"] == [32, 1073741824]
    assert incident["outcome"] == "freed memory"
    session = guard_magics(shell).session
    assert session.last_failure.value == "oom"
    assert_valid("Card", to_json(session.cards.get(session.last_retry_card).card))

    shell.run_line_magic("gpuguard", "history")
    history = capsys.readouterr().out
    assert "oom.tf.tensor" in history
    assert "1 incidents from" in history


def test_a_plain_python_error_gets_no_card_and_no_incident(shell, incident_log, capsys):
    result = shell.run_cell("%%gpuguard\nmodle.fit()")
    out = capsys.readouterr().out
    assert type(result.error_in_exec) is NameError
    assert "NameError" in out
    assert "ipy_gpuguard · finished" in out
    assert "What to do" not in out
    assert not incident_log.exists()


@pytest.mark.tensorflow
def test_the_guards_own_failure_in_diagnosis_is_one_line(shell, incident_log, capsys, monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("rule catalog unreadable")

    monkeypatch.setattr("ipy_gpuguard.shell.remediation.diagnose", broken)
    result = shell.run_cell(
        "%%gpuguard\nimport tensorflow as tf\nraise tf.errors.ResourceExhaustedError(None, None, 'OOM when allocating tensor')"
    )
    captured = capsys.readouterr()
    assert type(result.error_in_exec).__name__ == "ResourceExhaustedError"
    assert "ResourceExhaustedError" in captured.out
    assert "OOM when allocating tensor" in captured.out
    guard_lines = [line for line in captured.err.splitlines() if line.strip()]
    assert guard_lines == [
        "ipy_gpuguard: the guard failed to diagnose (ValueError: rule catalog unreadable); "
        "the traceback above is the cell's own"
    ]


def test_the_guards_own_failure_still_records_how_the_cell_ended(shell, capsys, monkeypatch):
    """The kernel's state file (what the server's post-mortem reads) never keeps a cell that
    ended as still running, whatever failed in the guard after it."""
    from ipy_gpuguard.shell.session import GuardSession

    ended = []

    def broken(*args, **kwargs):
        raise ValueError("rule catalog unreadable")

    monkeypatch.setattr(GuardSession, "after", broken)
    monkeypatch.setattr(
        GuardSession, "ended", lambda self, outcome, rule=None: ended.append(outcome)
    )
    shell.run_cell("%%gpuguard\nraise RuntimeError('CUDA out of memory')")
    shell.run_cell("%%gpuguard\nfine = True")
    assert ended == ["error", "ok"]
    assert "the guard failed to diagnose (ValueError" in capsys.readouterr().err


def test_history_of_an_empty_log_says_so(shell, incident_log, capsys):
    shell.run_line_magic("gpuguard", "history 5")
    assert "no incidents recorded yet" in capsys.readouterr().out


SCRIPT = """
import json, sys
from IPython.core.interactiveshell import InteractiveShell
sys.path.insert(0, {root!r})
from tests.oom_cells import keras_fit_oom
shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "ipy_gpuguard")
shell.run_line_magic("config", "GPUGuard.incident_log = {log!r}")
result = shell.run_cell("%%gpuguard --interval 0.1\\n" + keras_fit_oom(jit_compile={jit}))
print("ERROR-TYPE", type(result.error_in_exec).__name__)
from ipy_gpuguard.protocol import to_json
session = shell.magics_manager.registry["GPUGuardMagics"].session
print("CARD-JSON", json.dumps(to_json(session.cards.get(session.last_retry_card).card)))
"""


JAX_SCRIPT = """
import sys
sys.path.insert(0, {root!r})
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "ipy_gpuguard")
cell = "import jax.numpy as jnp\\njnp.zeros((2**40,), dtype=jnp.float32).block_until_ready()"
result = shell.run_cell("%%gpuguard --interval 0.1\\n" + cell)
print("ERROR-TYPE", type(result.error_in_exec).__name__)
print("FRAMEWORKS", sorted(name for name in ("tensorflow", "keras", "torch") if name in sys.modules))
"""


@pytest.mark.tensorflow
def test_a_real_jax_oom_gets_jaxs_own_remedies_in_a_fresh_process():
    """Issue 36: a JAX out-of-memory error got Keras' mixed-precision policy and Keras 3's
    gradient_accumulation_steps. A process that imported JAX alone, as a JAX notebook does."""
    env = {**os.environ, "GPUGUARD_SIMULATE": "8GiB"}
    script = textwrap.dedent(JAX_SCRIPT).format(root=str(ROOT))
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=240
    )
    assert "ERROR-TYPE JaxRuntimeError" in run.stdout, run.stderr[-3000:]
    assert "FRAMEWORKS []" in run.stdout  # nothing of the guard's imported another framework
    card = run.stdout[run.stdout.index("ipy_gpuguard · Out of") :]
    assert "jnp.bfloat16" in card
    assert "Recompute activations" in card
    for other in ("keras", "Keras", "TensorFlow", "tf.", "torch", "PyTorch"):
        assert other not in card, other


@pytest.mark.tensorflow
@pytest.mark.parametrize("jit_compile", [False, True], ids=["graph", "xla"])
def test_a_real_keras_oom_with_and_without_xla_in_a_fresh_process(tmp_path, jit_compile):
    """A fresh process, so that TensorFlow's CPU allocator counts bytes (BFC on) and XLA's
    allocation failure is whole: the card then also says what freeing reclaimed."""
    log = tmp_path / "incidents.jsonl"
    env = {
        **os.environ,
        "GPUGUARD_SIMULATE": "8GiB",
        "TF_CPU_ALLOCATOR_USE_BFC": "true",
        "TF_CPP_MIN_LOG_LEVEL": "0",
    }
    script = textwrap.dedent(SCRIPT).format(root=str(ROOT), log=str(log), jit=jit_compile)
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=240
    )
    assert "ERROR-TYPE ResourceExhaustedError" in run.stdout, run.stderr[-3000:]
    (incident,) = [json.loads(line) for line in log.read_text().splitlines()]
    (card_json,) = [line for line in run.stdout.splitlines() if line.startswith("CARD-JSON ")]
    assert_valid("Card", json.loads(card_json.removeprefix("CARD-JSON ")))
    card = run.stdout[run.stdout.index("ipy_gpuguard · Out of") :]
    if jit_compile:
        # XLA's message names only the bytes; the CPU allocator's log line names the device
        assert incident["rule_id"] == "oom.xla"
        assert incident["facts"]["requested_bytes"] > 128 * 1024**3
        assert incident["facts"]["device"] == "CPU:0"
    else:
        assert incident["rule_id"] == "oom.tf.tensor"
        assert incident["facts"]["shape"] == [32, 2**30]
        assert incident["facts"]["dtype"] == "float"
        assert incident["facts"]["requested_bytes"] == 32 * 2**30 * 4
        assert incident["facts"]["device"] == "CPU:0"
    assert "Freed " in card  # the allocator was measured before and after freeing
    assert "Out of CPU memory" in card


def test_a_failing_auto_retry_cell_is_read_for_its_batch_size_once(
    shell, monkeypatch, capsys, tmp_path
):
    """The batch size was found three times per cell: its option check, its start (the
    remembered size) and its failure."""
    import ast

    from ipy_gpuguard.retry import find

    cell = (
        "%%gpuguard --auto-retry 1\nBATCH = 512\n"
        "if BATCH > 64:\n    raise RuntimeError('CUDA out of memory. Tried to allocate 2.00 GiB')\n"
    )
    read = []
    scope = find.Scope

    def reading(tree, parent=None):
        if parent is None:  # the cell's own scope: one reading of the cell
            read.append(ast.unparse(tree))
        return scope(tree, parent)

    monkeypatch.setattr(find, "Scope", reading)
    memory = tmp_path / "batch-sizes.json"  # the cell's start reads it for a remembered size
    shell.run_line_magic("config", f"GPUGuard.batch_memory = {str(memory)!r}")
    shell.run_cell(cell)
    assert "Retry: batch size" in capsys.readouterr().out  # the card offered a size
    assert sum("BATCH = 512" in text for text in read) == 1  # the attempts are other cells


def test_free_memory_on_a_card_leaves_a_later_unrelated_error_alone(shell, capsys):
    """Issue 22 item 4: "Free GPU memory" cleared whatever failure Python held last: a later
    error's ``sys.last_value``, traceback and frame locals were gone, and ``%debug`` had
    nothing."""
    import sys

    from ipy_gpuguard.protocol import FREE_MEMORY, Action

    shell.run_line_magic("config", "GPUGuard.free_memory_on_oom = False")
    shell.run_cell(
        "%%gpuguard\nBATCH = 512\nraise RuntimeError('CUDA out of memory. Tried to allocate 2.00 GiB')"
    )
    session = guard_magics(shell).session
    card = session.last_retry_card
    assert card is not None
    shell.run_cell(
        "def divide(numbers):\n    total = sum(numbers)\n    return total / 0\ndivide([1, 2])"
    )
    later = sys.last_value
    assert isinstance(later, ZeroDivisionError)
    result = session.act(Action(FREE_MEMORY, card))
    assert result.ok
    assert sys.last_value is later
    frame = later.__traceback__.tb_next.tb_next.tb_frame  # divide's frame
    assert frame.f_locals["total"] == 3  # what %debug shows


def test_a_stop_during_auto_retry_ends_the_attempts_even_where_python_ignores_it(
    shell, capsys, monkeypatch
):
    """Issue 22 item 7: a Stop during --auto-retry was swallowed 12-15 times in 20; where it
    landed in a finaliser, Python printed "Exception ignored ... KeyboardInterrupt" and the
    search went on at smaller sizes."""
    cell = (
        "%%gpuguard --auto-retry 5\n"
        "import os, signal, time\n"
        "BATCH = 512\n"
        "class StoppedInAFinaliser:\n"
        "    def __del__(self):\n"
        "        os.kill(os.getpid(), signal.SIGINT)  # the stop button, as a finaliser runs\n"
        "        time.sleep(0.2)\n"
        "if BATCH < 512:  # an attempt\n"
        "    attempts = globals().get('attempts', 0) + 1\n"
        "    StoppedInAFinaliser()\n"
        "raise RuntimeError('CUDA out of memory. Tried to allocate 2.00 GiB')\n"
    )
    import sys

    ignored = []  # what Python reports as "Exception ignored"
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: ignored.append(unraisable))
    result = shell.run_cell(cell)
    err = capsys.readouterr().err
    assert [type(u.exc_value) for u in ignored] == [KeyboardInterrupt]  # landed in __del__
    assert shell.user_ns["attempts"] == 1  # and yet no further attempt ran
    assert not result.success
    assert "the retries stopped at your interrupt" in err


def test_a_stop_while_the_guard_diagnoses_is_one_line(shell, capsys, monkeypatch):
    """Issue 22 item 8: a Stop just after a failure, while the guard diagnosed and freed, printed
    IPython's "Error in callback <post_run_cell>" with a 55-line traceback through the guard."""
    from ipy_gpuguard.shell import remediation

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt  # the stop button, as the diagnosis runs

    monkeypatch.setattr(remediation, "diagnose", stopped)
    result = shell.run_cell("%%gpuguard\nraise RuntimeError('CUDA out of memory')")
    assert isinstance(result.error_in_exec, RuntimeError)  # the cell's own failure stands
    captured = capsys.readouterr()
    assert "Error in callback" not in captured.out + captured.err
    assert captured.out.count("Traceback") + captured.err.count("Traceback") <= 1
    assert "ipy_gpuguard: interrupted while the guard was to diagnose" in captured.err
    assert guard_magics(shell).session.last_run is not None
