"""What a card's retry printed, as its lasting card keeps it (issue 35, item 13): folded as a
notebook folds a stream, shown without escape codes, carried in the display's metadata."""

from __future__ import annotations

from ipy_gpuguard.protocol import CARD_MIME
from ipy_gpuguard.ui.card import StaticCard
from ipy_gpuguard.ui.output_render import (
    fold_stream,
    output_html,
    output_text,
    stream_outputs,
    summary,
)

from .test_card import CARD

#: Keras 3's progress bar as it writes it in a kernel: the bar in bold, then backspaces over
#: the whole line and a carriage return before each redraw.
BAR_1 = "\x1b[1m1/2\x1b[0m ━━━━━━━━━━ 0s 4ms/step - loss: 0.5000"
BAR_2 = "\x1b[1m2/2\x1b[0m ━━━━━━━━━━ 0s 3ms/step - loss: 0.2500"
PROGRESS = "Epoch 1/1\n" + BAR_1 + "\b" * len(BAR_1) + "\r" + BAR_2 + "\n"


def test_a_carriage_return_overwrites_its_line_from_the_start():
    assert fold_stream("step 1/4\rstep 4/4 done\n") == "step 4/4 done\n"
    assert fold_stream("abcdef\rXY") == "XYcdef"  # overwritten, not erased, as a notebook does
    assert fold_stream("one\r\ntwo\n") == "one\ntwo\n"


def test_a_backspace_erases_the_character_before_it_but_never_a_line_break():
    assert fold_stream("abc\b\bX") == "aX"
    assert fold_stream("line\n\b\bnext") == "line\nnext"


def test_a_progress_bar_keeps_its_last_drawing_only():
    (output,) = stream_outputs([("stdout", PROGRESS)])
    assert output["text"] == "Epoch 1/1\n" + BAR_2 + "\n"


def test_neighbours_of_one_stream_join_and_each_stream_keeps_its_name():
    outputs = stream_outputs(
        [("stdout", "a\r"), ("stdout", "b\n"), ("stderr", "warn\n"), ("stdout", "c\n")]
    )
    assert [(output["name"], output["text"]) for output in outputs] == [
        ("stdout", "b\n"),
        ("stderr", "warn\n"),
        ("stdout", "c\n"),
    ]
    assert summary(outputs) == "Output (3 lines)"


def test_the_fold_shows_the_text_without_escape_codes_and_escapes_html():
    outputs = stream_outputs([("stdout", PROGRESS), ("stderr", "<b>not bold</b>\n")])
    html = output_html(outputs)
    assert html.startswith(
        '<details class="ipy-gpuguard-output"><summary>Output (3 lines)</summary>'
    )
    assert "2/2 ━━━━━━━━━━ 0s 3ms/step - loss: 0.2500" in html
    assert "&lt;b&gt;not bold&lt;/b&gt;" in html
    assert "\x1b" not in html
    assert "1/2" not in html
    text = output_text(outputs)
    assert text.startswith("Output (3 lines):\nEpoch 1/1\n2/2 ")
    assert "\x1b" not in text


def test_a_card_with_output_carries_it_under_its_html_and_text_and_in_its_metadata():
    outputs = stream_outputs([("stdout", PROGRESS)])
    bundle, metadata = StaticCard(CARD, outputs)._repr_mimebundle_()
    plain = StaticCard(CARD)._repr_mimebundle_()
    assert bundle["text/html"] == plain["text/html"] + output_html(outputs)
    assert bundle["text/plain"] == plain["text/plain"] + "\n\n" + output_text(outputs)
    # As the lab extension saves a card's output: it renders the streams again from there.
    assert metadata == {CARD_MIME: {"action_output": list(outputs)}}


def test_a_card_without_output_is_its_bundle_alone():
    assert not isinstance(StaticCard(CARD, ())._repr_mimebundle_(), tuple)
    assert output_html(()) == ""
    assert output_text(()) == ""
