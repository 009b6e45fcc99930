"""A retry changes the number that reached the failing call in the run that failed, in a real
shell: the sizes each attempt really ran with are recorded by the cell itself (issue 22, 9-11)."""

from __future__ import annotations

import pytest

OOM = "raise RuntimeError('CUDA out of memory. Tried to allocate 2.00 GiB')"
#: A stand-in for a framework's call: it records the size it ran with and fails above 100.
CALLS = f"""ran = globals().setdefault("ran", [])
def fit(batch_size):
    ran.append(("fit", batch_size))
    if batch_size > 100:
        {OOM}
def evaluate(batch_size):
    ran.append(("evaluate", batch_size))
    if batch_size > 100:
        {OOM}
"""


@pytest.fixture
def ran(shell, tmp_path):
    """The calls the cell made; the shell is shared, so the cell's names go with the test, and
    the sizes that fitted are remembered in this test's own file (a remembered size would start
    the retry there)."""
    memory = str(tmp_path / "batch-sizes.json")
    shell.run_line_magic("config", f"GPUGuard.batch_memory = {memory!r}")
    before = set(shell.user_ns)
    yield lambda: shell.user_ns["ran"]
    for name in set(shell.user_ns) - before:
        del shell.user_ns[name]


@pytest.mark.parametrize(
    "branches",
    [
        "if FAST:\n    BATCH = 256\nelse:\n    BATCH = 64\n",
        "match FAST:\n    case True:\n        BATCH = 256\n    case _:\n        BATCH = 64\n",
        "try:\n    import json\n    BATCH = 256\nexcept ImportError:\n    BATCH = 64\n",
    ],
    ids=["if-else", "match", "try-except"],
)
def test_a_size_set_in_two_branches_is_changed_in_the_branch_that_ran(shell, ran, branches):
    """Item 9: the textually last literal was rewritten whatever branch ran: the cell reran at
    256 while the card said "32 instead of 64"."""
    cell = f"%%gpuguard --auto-retry 2\n{CALLS}FAST = True\n{branches}fit(batch_size=BATCH)\n"
    result = shell.run_cell(cell)
    sizes = [size for _, size in ran()]
    assert sizes[0] == 256
    assert len(sizes) == 3
    assert sizes[1] < 256  # the retry changed the branch that ran: each attempt is smaller
    assert sizes[2] < sizes[1]
    assert result.success == (sizes[-1] <= 100)


def test_a_size_set_in_two_branches_that_the_run_cannot_tell_apart_is_not_changed(
    shell, ran, capsys
):
    """Item 9: both branches set 256; changing either may change the one that did not run."""
    cell = (
        "%%gpuguard\n" + CALLS + "FAST = True\nif FAST:\n    BATCH = 256\nelse:\n    BATCH = 256\n"
        "evaluate(batch_size=BATCH)\n"
    )
    shell.run_cell(cell)
    card = capsys.readouterr().out.partition("Out of GPU memory")[2]
    assert (
        "Retry: not offered: BATCH, the batch size in evaluate(batch_size=…) on line 16, is set in "
        "more than one branch (lines 13, 15) and the guard cannot tell which one ran"
    ) in card
    assert "--batch-var" in card


def test_a_computed_size_is_not_mistaken_for_an_unrelated_batch_variable(shell, ran, capsys):
    """Item 10: with ``batch_size=n * 4`` and an unrelated ``VAL_BATCH = 1024`` in the cell, the
    retry halved ``VAL_BATCH`` and the fit reran unchanged."""
    body = CALLS + "n = 64\nVAL_BATCH = 1024\nfit(batch_size=n * 4)\n"
    shell.run_cell("%%gpuguard\n" + body)
    card = capsys.readouterr().out.partition("Out of GPU memory")[2]  # below the traceback
    assert "Retry: not offered: the batch size in fit(batch_size=…) on line 13 is n * 4" in card
    assert "--batch-var" in card
    assert "VAL_BATCH" not in card
    shell.run_cell("%%gpuguard --auto-retry 2\n" + body)
    assert "--auto-retry: the batch size in fit(batch_size=…) on line 13 is n * 4" in (
        capsys.readouterr().err
    )
    assert ran() == [("fit", 256)]  # the refused cell did not run


def test_a_size_named_with_batch_var_reaches_a_computed_call(shell, ran):
    shell.run_cell(
        "%%gpuguard --auto-retry 3 --batch-var n\n" + CALLS + "n = 64\nfit(batch_size=n * 4)\n"
    )
    assert next(size for _, size in ran()) == 256
    assert all(size <= 100 for _, size in ran()[-1:])


def test_training_in_a_helper_changes_the_call_that_failed(shell, ran):
    """Item 11: the first batch size in the cell was taken: the fit's 64 was halved and the
    evaluate's 512 ran three times."""
    cell = (
        "%%gpuguard --auto-retry 2\n" + CALLS + "def train():\n    fit(batch_size=64)\n"
        "    evaluate(batch_size=512)\n"
        "train()\n"
    )
    shell.run_cell(cell)
    evaluated = [size for call, size in ran() if call == "evaluate"]
    fitted = {size for call, size in ran() if call == "fit"}
    assert fitted == {64}
    assert evaluated[0] == 512
    assert evaluated[1] < 512
    assert evaluated[2] < evaluated[1]


def test_a_decorators_batch_size_is_not_the_one_that_failed(shell, ran):
    """Item 11: a decorator's argument came first in the cell and was the one changed."""
    cell = (
        "%%gpuguard --auto-retry 2\n" + CALLS + "def options(batch_size):\n"
        "    return lambda function: function\n"
        "@options(batch_size=8)\n"
        "def train():\n"
        "    evaluate(batch_size=512)\n"
        "train()\n"
    )
    shell.run_cell(cell)
    evaluated = [size for _, size in ran()]
    assert evaluated[0] == 512
    assert evaluated[1] < 512


def test_a_guarded_cell_run_inside_a_guarded_cell_says_in_one_line_why_it_does_not_retry(
    shell, ran, capsys
):
    """Item 13: an inner ``%%gpuguard --auto-retry`` cell run from a guarded cell neither
    retried nor showed a card, and said nothing."""
    shell.user_ns["inner"] = "%%gpuguard --auto-retry 2\n" + CALLS + "fit(batch_size=512)\n"
    result = shell.run_cell("%%gpuguard\nget_ipython().run_cell(inner)\nouter_ran = True\n")
    err = capsys.readouterr().err
    assert shell.user_ns["outer_ran"]
    assert result.success
    assert ran() == [("fit", 512)]
    said = [line for line in err.splitlines() if line.startswith("ipy_gpuguard:")]
    assert said == [
        "ipy_gpuguard: this cell (%%gpuguard --auto-retry 2) runs inside another guarded cell, "
        "whose guard watches it: its own options do not apply and its failure gets no card or "
        "retry; run it as a cell of its own to guard it"
    ]
