"""The rewrite changes the batch literal's characters and nothing else (property tests)."""

from __future__ import annotations

import hypothesis.strategies as st
from hypothesis import given, settings

from ipy_gpuguard.retry import find_batch_size, rewrite, without_batch_size
from ipy_gpuguard.retry.source import CellSource

SPACE = st.sampled_from(["", " ", "  ", "\t"])
NEWLINE = st.sampled_from(["\n", "\r\n"])
TEXT = st.text(
    st.characters(blacklist_categories=["Cs", "Cc"], blacklist_characters='"\\'), max_size=12
)
NUMBER = st.integers(1, 10**6)


@st.composite
def filler(draw):
    """A line with no batch size: Python, a comment, a string that mentions one, IPython."""
    text = draw(TEXT)
    return draw(
        st.sampled_from(
            [
                f"x{draw(SPACE)}={draw(SPACE)}{draw(NUMBER)}",
                f"# batch_size={draw(NUMBER)} {text}",
                f'label = "{text} batch_size={draw(NUMBER)}"',
                f"print({draw(NUMBER)}, '{text.replace(chr(39), '')}')",
                "%matplotlib inline",
                "!nvidia-smi",
                "files = !ls",
                "model.summary?",
                "values = [1,\n    2]",
                "",
            ]
        )
    )


@st.composite
def batch_line(draw):
    """A line that sets the batch size, in one of its forms, and the size written."""
    n, a, b = draw(NUMBER), draw(SPACE), draw(SPACE)
    comment = draw(st.sampled_from(["", "  # fits?", f"  # {draw(TEXT)}"]))
    form = draw(
        st.sampled_from(
            [
                f"history = model.fit(x, y, batch_size{a}={b}{n}, epochs=2){comment}",
                f"ds = ds.shuffle(100).batch({a}{n}{b}){comment}",
                f"BATCH_SIZE{a}={b}{n}{comment}\nmodel.fit(x, batch_size=BATCH_SIZE)",
                f"model.fit(x, y,{a}{n}){comment}",
                f"%time model.fit(x, batch_size={n}){comment}",
            ]
        )
    )
    return form, n


@st.composite
def cells(draw):
    before = draw(st.lists(filler(), max_size=4))
    after = draw(st.lists(filler(), max_size=4))
    line, n = draw(batch_line())
    newline = draw(NEWLINE)
    return newline.join([*before, line, *after]) + draw(st.sampled_from(["", newline])), n


@settings(max_examples=300, deadline=None)
@given(cells(), NUMBER)
def test_the_rewrite_changes_only_the_batch_literal(cell_and_size, new_size):
    cell, size = cell_and_size
    target = find_batch_size(cell).target
    assert target is not None
    assert target.literal is not None
    assert target.literal.value == size
    start, end = target.literal.start, target.literal.end
    result = rewrite(cell, target, new_size)
    assert result.source[:start] == cell[:start]
    assert result.source[start : start + len(str(new_size))] == str(new_size)
    assert result.source[start + len(str(new_size)) :] == cell[end:]
    assert not isinstance(CellSource(result.source).parse(), str)
    again = find_batch_size(result.source).target
    assert again is not None
    assert again.literal.value == new_size
    (edit,) = result.edits
    assert (edit.start, edit.end, edit.old_text) == (start, end, cell[start:end])
    assert edit.new_text == str(new_size)
    # What a frontend does: replace the old text at (line, column) of the cell's line.
    lines = CellSource(cell).lines
    line = lines[edit.line - 1]
    assert line[edit.column : edit.column + len(edit.old_text)] == edit.old_text
    assert edit.new_line_text in CellSource(result.source).lines[edit.line - 1]


@settings(max_examples=200, deadline=None)
@given(st.lists(filler(), max_size=8), NEWLINE)
def test_cells_without_a_batch_size_are_left_alone_with_a_reason(lines, newline):
    cell = newline.join(lines)
    finding = find_batch_size(cell)
    assert finding.target is None
    assert finding.reason.startswith("no batch size in this cell")
    assert without_batch_size(cell, finding) == cell


def test_a_name_from_an_earlier_cell_is_set_not_rewritten():
    cell = "model.fit(x, batch_size=BATCH)"
    result = rewrite(cell, find_batch_size(cell).target, 32)
    assert result.source == cell
    assert result.namespace == {"BATCH": 32}
    assert result.edits == ()


def test_accumulation_steps_are_rewritten_with_the_batch_size():
    cell = "opt = Adam(gradient_accumulation_steps=1)  # x\nmodel.fit(x, batch_size=256)\n"
    finding = find_batch_size(cell)
    result = rewrite(cell, finding.target, 64, (finding.accumulation, 4))
    assert result.source == (
        "opt = Adam(gradient_accumulation_steps=4)  # x\nmodel.fit(x, batch_size=64)\n"
    )
    assert [(edit.line, edit.old_text, edit.new_text) for edit in result.edits] == [
        (1, "1", "4"),
        (2, "256", "64"),
    ]


def test_the_cell_without_its_batch_size_is_the_same_for_every_size():
    cell = "model.fit(x, batch_size=256)"
    finding = find_batch_size(cell)
    smaller = rewrite(cell, finding.target, 8).source
    assert without_batch_size(cell, finding) == without_batch_size(
        smaller, find_batch_size(smaller)
    )
