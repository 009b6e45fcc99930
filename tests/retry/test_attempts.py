"""Retrying a cell that ran out of memory, in a real shell with real Keras on CPU."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from IPython.core.error import UsageError

from ipy_gpuguard.retry import CellRetry, RetrySetup, Runners, RunOutcome, Trial, find_batch_size

from ..conftest import guard_magics
from ..oom_cells import keras_fit_cliff

LIMIT = 100  # the largest batch that fits the cells below
SAMPLES = 1024


@pytest.fixture
def batch_memory(shell, tmp_path):
    path = tmp_path / "batch_sizes.json"
    shell.run_line_magic("config", f"GPUGuard.batch_memory = {str(path)!r}")
    return path


def retry_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("ipy_gpuguard · retry:")]


@pytest.mark.tensorflow
def test_auto_retry_find_max_ends_near_the_cliff_with_the_variables_of_that_run(
    shell, batch_memory, capsys
):
    cell = "%%gpuguard --auto-retry --find-max\n" + keras_fit_cliff(256, LIMIT, SAMPLES)
    result = shell.run_cell(cell)
    out = capsys.readouterr().out

    assert result.error_in_exec is None  # fixed by itself: the cell ends as a success
    assert "ResourceExhaustedError" in out  # the first failure's traceback stays shown
    lines = retry_lines(out)
    final = int(lines[-1].split("batch size ")[1].split(":")[0])
    assert lines[-1].endswith(f"batch size {final}: fits")
    assert 0.85 * LIMIT <= final <= LIMIT
    assert len(lines) <= 12
    # The namespace holds the last run's model and history: Keras counted its steps.
    history = shell.user_ns["history"]
    assert history.params["steps"] == math.ceil(SAMPLES / final)
    assert history.model is shell.user_ns["model"]
    (entry,) = json.loads(Path(batch_memory).read_text()).values()
    assert entry["batch_size"] == final


@pytest.mark.tensorflow
def test_a_remembered_size_is_where_the_next_search_starts(shell, batch_memory, capsys):
    shell.run_cell("%%gpuguard --auto-retry\n" + keras_fit_cliff(256, LIMIT, SAMPLES))
    # The failed allocation is 4 TiB a sample on an 8 GiB device: the estimate jumps 8 times down.
    assert retry_lines(capsys.readouterr().out) == ["ipy_gpuguard · retry: batch size 32: fits"]

    # The same cell with another size: from 512 the estimate would try 64; memory says 32.
    result = shell.run_cell("%%gpuguard --auto-retry\n" + keras_fit_cliff(512, LIMIT, SAMPLES))
    out = capsys.readouterr().out
    assert result.error_in_exec is None
    assert "batch size 32 fitted this cell on this device before" in out  # the panel says so
    assert retry_lines(out) == ["ipy_gpuguard · retry: batch size 32: fits"]


@pytest.mark.tensorflow
def test_without_auto_retry_the_card_offers_a_size_and_nothing_runs_again(
    shell, batch_memory, capsys
):
    result = shell.run_cell("%%gpuguard\n" + keras_fit_cliff(256, LIMIT, SAMPLES))
    out = capsys.readouterr().out
    assert type(result.error_in_exec).__name__ == "ResourceExhaustedError"
    assert (
        "Retry: batch size 32 instead of 256 (line 15: BATCH_SIZE = 256  # the cell's batch size)"
        in out
    )
    assert retry_lines(out) == []
    assert shell.user_ns["BATCH_SIZE"] == 256


@pytest.mark.tensorflow
def test_a_name_from_an_earlier_cell_is_set_in_the_namespace(shell, batch_memory, capsys):
    shell.run_cell("BATCH = 512")
    cell = keras_fit_cliff(0, LIMIT, SAMPLES).replace(
        "BATCH_SIZE = 0  # the cell's batch size\n", ""
    )
    result = shell.run_cell("%%gpuguard --auto-retry\n" + cell.replace("BATCH_SIZE", "BATCH"))
    assert result.error_in_exec is None
    assert shell.user_ns["BATCH"] == 64  # 512 / 8, the estimate's largest jump down
    assert retry_lines(capsys.readouterr().out) == ["ipy_gpuguard · retry: batch size 64: fits"]


@pytest.mark.tensorflow
def test_the_floor_ends_the_search_and_the_cell_stays_failed(shell, batch_memory, capsys):
    cell = "%%gpuguard --auto-retry --min-batch 64\n" + keras_fit_cliff(256, 10, SAMPLES)
    result = shell.run_cell(cell)
    out = capsys.readouterr().out
    assert type(result.error_in_exec).__name__ == "ResourceExhaustedError"
    assert retry_lines(out) == ["ipy_gpuguard · retry: batch size 64: out of memory"]
    assert "does not fit at any batch size down to 64" in out


def test_auto_retry_on_a_cell_without_a_batch_size_is_refused_before_it_runs(shell, capsys):
    shell.run_cell("%%gpuguard --auto-retry\nran = True\nmodel.fit(x, y)")
    captured = capsys.readouterr()
    assert "UsageError: %%gpuguard --auto-retry: no batch size in this cell" in captured.err
    assert "--batch-var NAME" in captured.err
    assert "ran" not in shell.user_ns


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("--auto-retry 0", "--auto-retry takes a number of attempts from 1 to 100, not 0"),
        ("--margin 150", "--margin is a percentage between 0 and 100"),
        ("--min-batch 0", "--min-batch is a batch size from 1 to 2147483647, not 0"),
        ("--batch-var 2x", "--batch-var takes a variable name like BATCH_SIZE, not '2x'"),
    ],
)
def test_wrong_retry_options_say_what_is_wrong(shell, line, message):
    with pytest.raises(UsageError, match=re.escape(message)):
        guard_magics(shell).guard_options(line, "model.fit(x, batch_size=64)")


def test_keep_effective_batch_multiplies_the_accumulation_steps():
    cell = (
        "opt = keras.optimizers.SGD(gradient_accumulation_steps=2)\n"
        "model.fit(x, y, batch_size=256)\n"
    )
    sources = []

    def run(rewritten, probe):
        sources.append(rewritten.source)
        return RunOutcome(finished=True, peak_bytes=None)

    finding = find_batch_size(cell)
    setup = RetrySetup(cell, finding, 256, Trial(256, False), None, None, keep_effective_batch=True)
    attempt = CellRetry(setup, Runners(run)).attempt(64)
    assert attempt.fits
    assert sources == [
        "opt = keras.optimizers.SGD(gradient_accumulation_steps=8)\n"
        "model.fit(x, y, batch_size=64)\n"
    ]


@pytest.mark.tensorflow
def test_gpuguard_retry_does_what_the_cards_button_does(shell, batch_memory, capsys):
    with pytest.raises(UsageError, match="no guarded cell has run out of memory"):
        guard_magics(shell).gpuguard_line("retry")
    shell.run_cell("%%gpuguard\n" + keras_fit_cliff(256, LIMIT, SAMPLES))
    capsys.readouterr()

    shell.run_line_magic("gpuguard", "retry")
    out = capsys.readouterr().out
    assert retry_lines(out) == ["ipy_gpuguard · retry: batch size 32: fits"]
    assert "ipy_gpuguard · Fixed: batch size 32 fits" in out
    assert "line 15: BATCH_SIZE = 256  # the cell's batch size → BATCH_SIZE = 32" in out
    assert shell.user_ns["history"].params["steps"] == SAMPLES // 32

    shell.run_line_magic("gpuguard", "retry max")
    out = capsys.readouterr().out
    # Issue 21: a terminal printed a traceback per probe (1,064 lines): one line each now.
    assert "Traceback" not in out
    assert "ResourceExhaustedError" not in out
    final = retry_lines(out)[-1]
    assert final.startswith("ipy_gpuguard · retry: batch size ")
    assert final.endswith(": fits")
    assert 0.85 * LIMIT <= shell.user_ns["BATCH_SIZE"] <= LIMIT


@pytest.mark.tensorflow
def test_files_that_cannot_be_written_do_not_undo_a_fix(shell, tmp_path, capsys):
    """Issue 14, 15: the fixed cell replied ``error``: "the guard failed to diagnose"."""
    home = tmp_path / "home"
    home.write_text("not a directory")
    shell.run_line_magic("config", f"GPUGuard.batch_memory = {str(home / 'b.json')!r}")
    shell.run_line_magic("config", f"GPUGuard.incident_log = {str(home / 'i.jsonl')!r}")
    result = shell.run_cell("%%gpuguard --auto-retry\n" + keras_fit_cliff(256, LIMIT, SAMPLES))
    captured = capsys.readouterr()
    assert result.error_in_exec is None
    assert retry_lines(captured.out) == ["ipy_gpuguard · retry: batch size 32: fits"]
    assert "the guard failed" not in captured.err
    assert captured.err.count("ipy_gpuguard: cannot remember batch size 32") == 1
    assert captured.err.count("ipy_gpuguard: cannot write the incident log") == 1


def test_a_search_whose_probe_leaves_memory_held_ends_on_a_run_that_fits():
    """Issue 14, 8: --find-max stopped after a failed probe with memory held: the reply was
    ``error``, the batch size the failed one's, the model the failed attempt's."""
    from ipy_gpuguard.retry import FIXED, decide

    cell = "BATCH = 256\nmodel.fit(x, batch_size=BATCH)\n"
    ran = []

    def run(rewritten, probe):
        size = int(rewritten.source.split("BATCH = ")[1].split()[0])
        ran.append(size)
        if size <= 100:
            return RunOutcome(finished=True, peak_bytes=size * 2**24)
        return RunOutcome(
            finished=True, error="OOM", out_of_memory=True, allocator_after_bytes=2**31
        )

    finding = find_batch_size(cell)
    first_failure = Trial(256, False, fit_fraction=0.25)  # the estimate: start at 64, which fits
    setup = RetrySetup(cell, finding, 256, first_failure, 8 * 2**30, 0)
    retry = CellRetry(setup, Runners(run), find_max=True)
    last = retry.auto(12, find_max=True, report=lambda attempt: None)
    assert any(size > 100 for size in ran)  # a probe failed and left memory held...
    assert last.fits  # ... and the search ended on a run that fits,
    assert last.size == retry.search.largest_fitting == ran[-1]  # at the size it reports
    assert decide(retry, last).state == FIXED


def test_the_size_offered_for_a_restart_is_not_bounded_by_a_failure_with_memory_held():
    """Issue 35 item 11: a retry at 64 failed because memory did not come back; the restart was
    offered at 8, derived from that failure, and in the fresh kernel 64 fitted."""
    from ipy_gpuguard.retry import MEMORY_HELD, decide

    cell = "BATCH = 128\nmodel.fit(x, batch_size=BATCH)\n"
    ran = []

    def run(rewritten, probe):
        ran.append(int(rewritten.source.split("BATCH = ")[1].split()[0]))
        return RunOutcome(
            finished=True, error="OOM", out_of_memory=True, allocator_after_bytes=6 * 2**30
        )

    finding = find_batch_size(cell)
    setup = RetrySetup(cell, finding, 128, Trial(128, False), 8 * 2**30, 0)
    retry = CellRetry(setup, Runners(run))
    last = retry.auto(1, find_max=False, report=lambda attempt: None)
    assert ran == [64]
    verdict = decide(retry, last)
    assert verdict.state == MEMORY_HELD
    assert verdict.batch_size == 64
