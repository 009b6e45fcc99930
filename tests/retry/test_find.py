"""Finding the batch size in a cell's syntax, IPython syntax included."""

from __future__ import annotations

import pytest

from ipy_gpuguard.retry import CellFrame, find_batch_size
from ipy_gpuguard.retry.source import CellSource


def test_a_literal_in_fit_is_the_batch_size():
    finding = find_batch_size("model.fit(x, y, batch_size=64, epochs=2)")
    assert finding.target is not None
    assert finding.target.literal is not None
    assert finding.target.literal.value == 64
    assert finding.target.name is None


def test_a_variable_assigned_in_the_cell_flows_into_fit():
    cell = "BATCH_SIZE = 128\nmodel.fit(x, y, batch_size=BATCH_SIZE)\n"
    target = find_batch_size(cell).target
    assert target is not None
    assert target.name == "BATCH_SIZE"
    assert target.literal is not None
    assert cell[target.literal.start : target.literal.end] == "128"


def test_a_copy_of_a_variable_is_followed_to_its_number():
    target = find_batch_size("B = 32\nbs = B\nds = ds.batch(bs)").target
    assert target is not None
    assert target.name == "B"


@pytest.mark.parametrize(
    ("cell", "value"),
    [
        ("ds = tf.data.Dataset.from_tensor_slices(x).shuffle(9).batch(32)", 32),
        ("ds = ds.padded_batch(16, padded_shapes=[None])", 16),
        ("model.fit(x, y, 256, 3)", 256),
        ("model.predict(x, 48)", 48),
        ("train = keras.utils.image_dataset_from_directory('d', batch_size=24)", 24),
        ("loader = DataLoader(data, batch_size=0x40)", 64),
    ],
)
def test_batch_sizes_in_the_calls_that_take_them(cell, value):
    target = find_batch_size(cell).target
    assert target is not None
    assert target.literal is not None
    assert target.literal.value == value


def test_a_name_from_an_earlier_cell_is_set_in_the_namespace():
    target = find_batch_size("history = model.fit(x, y, batch_size=BATCH)").target
    assert target is not None
    assert target.name == "BATCH"
    assert target.literal is None


def test_batch_var_names_the_variable_even_when_nothing_uses_it_visibly():
    cell = "B1 = 32\nB2 = 64\ntrain(B1, B2)"
    assert find_batch_size(cell).target is None
    target = find_batch_size(cell, batch_var="B2").target
    assert target is not None
    assert target.literal is not None
    assert target.literal.value == 64


def test_several_candidates_that_flow_nowhere_are_offered_as_choices():
    finding = find_batch_size("TRAIN_BATCH = 32\nEVAL_BATCH = 64\nrun(TRAIN_BATCH, EVAL_BATCH)")
    assert finding.target is None
    assert [choice.name for choice in finding.choices] == ["TRAIN_BATCH", "EVAL_BATCH"]
    assert "--batch-var" in finding.reason


def test_a_single_batch_named_variable_is_the_batch_size():
    target = find_batch_size("BATCH_SIZE = 32\ntrain(model, BATCH_SIZE)").target
    assert target is not None
    assert target.name == "BATCH_SIZE"


def test_the_call_on_the_failing_line_wins_among_several():
    cell = "model.fit(x, y, batch_size=64)\nmodel.evaluate(x, y, batch_size=512)"
    assert find_batch_size(cell).target.literal.value == 64
    assert find_batch_size(cell, failing=(CellFrame(2),)).target.literal.value == 512


def test_an_expression_is_refused_with_what_to_do():
    finding = find_batch_size("model.fit(x, batch_size=base * 2)")
    assert finding.target is None
    assert "base * 2" in finding.reason
    assert "--batch-var" in finding.reason


def test_a_name_bound_by_a_loop_is_not_a_number_the_guard_can_change():
    finding = find_batch_size("for bs in (8, 16):\n    model.fit(x, batch_size=bs)")
    assert finding.target is None
    assert "bs" in finding.reason


def test_no_batch_size_says_how_to_name_one():
    finding = find_batch_size("print('batch_size=5')  # batch_size=6\nmodel.fit(x)")
    assert finding.target is None
    assert finding.reason.startswith("no batch size in this cell")
    assert "--batch-var NAME" in finding.reason


def test_a_cell_that_is_not_python_says_where():
    finding = find_batch_size("%%bash\nfor f in *; do echo $f; done")
    assert finding.target is None
    assert "not Python" in finding.reason
    assert "line 2" in finding.reason


def test_ipython_syntax_is_masked_but_python_after_time_is_kept():
    cell = "%matplotlib inline\nfiles = !ls\nmodel?\n%time h = model.fit(x, batch_size=16)\n"
    target = find_batch_size(cell).target
    assert target is not None
    assert cell[target.literal.start : target.literal.end] == "16"


def test_a_percent_inside_brackets_is_python_modulo_not_a_magic():
    source = CellSource("x = (a\n% b)\n")
    assert source.python == source.text


def test_gradient_accumulation_steps_are_found():
    finding = find_batch_size(
        "STEPS = 2\nopt = keras.optimizers.Adam(gradient_accumulation_steps=STEPS)\n"
        "model.fit(x, batch_size=64)"
    )
    assert finding.accumulation is not None
    assert finding.accumulation.value == 2


def test_columns_are_characters_not_utf8_bytes():
    cell = "s = 'déjà vu ✓'; model.fit(x, batch_size=64)"
    target = find_batch_size(cell).target
    assert cell[target.literal.start : target.literal.end] == "64"


@pytest.mark.parametrize(
    "elsewhere",
    [
        "def helper():\n    BATCH = 8\n",
        "class Settings:\n    BATCH = 8\n",
        "if False:\n    BATCH = 8\n",
        "def helper(BATCH=8):\n    pass\n",
    ],
    ids=["function", "class", "dead-branch", "parameter"],
)
def test_only_assignments_in_the_cells_own_flow_reach_a_top_level_call(elsewhere):
    """Issue 14, 11: the retry rewrote the helper's literal and ran at 64 again."""
    cell = "BATCH = 64\n" + elsewhere + "model.fit(x, y, batch_size=BATCH)\n"
    target = find_batch_size(cell).target
    assert target is not None
    assert target.literal is not None
    assert (target.literal.line, target.literal.value) == (1, 64)


def test_a_call_inside_a_function_reads_that_functions_own_binding_first():
    cell = "B = 64\ndef train():\n    B = 16\n    model.fit(x, batch_size=B)\ntrain()\n"
    target = find_batch_size(cell).target
    assert (target.literal.line, target.literal.value) == (3, 16)
    uses_global = "B = 64\ndef train():\n    model.fit(x, batch_size=B)\ntrain()\n"
    assert find_batch_size(uses_global).target.literal.value == 64


def test_a_call_in_a_branch_that_never_runs_is_not_the_batch_size():
    cell = "if False:\n    model.fit(x, batch_size=8)\nmodel.fit(x, batch_size=32)\n"
    assert find_batch_size(cell).target.literal.value == 32


BRANCHES = "if FAST:\n    BATCH = 256\nelse:\n    BATCH = 64\nmodel.fit(x, batch_size=BATCH)\n"


@pytest.mark.parametrize(("value", "line"), [(256, 2), (64, 4)])
def test_the_runs_value_tells_which_branch_set_the_size(value, line):
    target = find_batch_size(BRANCHES, failing=(CellFrame(5, integers={"BATCH": value}),)).target
    assert (target.literal.line, target.literal.value) == (line, value)


def test_without_the_run_a_size_set_in_two_branches_waits_for_it():
    finding = find_batch_size(BRANCHES)
    assert finding.target is None
    assert finding.needs_the_run
    assert "--batch-var" in finding.reason


def test_a_branch_that_may_not_run_leaves_an_earlier_cells_value_possible():
    cell = "if FAST:\n    BATCH = 256\nmodel.fit(x, batch_size=BATCH)\n"
    from_before = find_batch_size(cell, failing=(CellFrame(3, integers={"BATCH": 32}),)).target
    assert (from_before.name, from_before.literal) == ("BATCH", None)  # set in the namespace
    either = find_batch_size(cell, failing=(CellFrame(3, integers={"BATCH": 256}),))
    assert either.target is None  # 256 from the branch, or from an earlier cell


def test_what_flows_into_the_failing_call_is_its_batch_size():
    cell = (
        "train = data.batch(64)\nvalid = data.batch(512)\ntrain = train.prefetch(2)\n"
        "model.fit(train)\nmodel.evaluate(valid)\n"
    )
    assert find_batch_size(cell, failing=(CellFrame(4),)).target.literal.value == 64
    assert find_batch_size(cell, failing=(CellFrame(5),)).target.literal.value == 512


def test_two_sizes_that_both_ran_and_neither_flows_are_not_guessed():
    cell = "a = data.batch(64)\nb = data.batch(512)\ntrain()\n"
    finding = find_batch_size(cell, failing=(CellFrame(3),))
    assert finding.target is None
    assert "line 1: .batch(64)" in finding.reason
    assert "--batch-var" in finding.reason


def test_a_size_after_the_failing_line_did_not_reach_it():
    cell = "model.fit(ds)\nmodel.evaluate(x, batch_size=512)\n"
    finding = find_batch_size(cell, failing=(CellFrame(1),))
    assert finding.target is None
    assert "reaches the failing line 1" in finding.reason


def test_a_parameter_is_changed_where_the_function_is_called():
    cell = (
        "def train(batch_size):\n    model.fit(x, batch_size=batch_size)\ntrain(batch_size=128)\n"
    )
    frames = (CellFrame(3), CellFrame(2, "train", 1))
    assert find_batch_size(cell, failing=frames).target.literal.value == 128
    called_positionally = cell.replace("train(batch_size=128)", "train(128)")
    finding = find_batch_size(called_positionally, failing=frames)
    assert finding.target is None
    assert "parameter" in finding.reason


def test_before_a_failure_the_first_size_the_guard_can_change_stands_for_the_cell():
    """An ``--auto-retry`` cell is checked before it runs: a computed size above a literal one
    must not refuse it; the failure then says which one it was."""
    cell = "ds = ds.batch(n * 2)\nmodel.fit(x, batch_size=64)\n"
    assert find_batch_size(cell).target.literal.value == 64
    assert find_batch_size(cell, failing=(CellFrame(2),)).target.literal.value == 64
    computed = find_batch_size(cell, failing=(CellFrame(1),))
    assert computed.target is None
    assert "n * 2" in computed.reason
