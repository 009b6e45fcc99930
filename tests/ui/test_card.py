"""The card: golden text, escaped HTML, the JSON for the lab extension, and the widget's buttons."""

from __future__ import annotations

from dataclasses import replace

import ipywidgets as widgets
import pytest

from ipy_gpuguard.cards import CardParts, base_card, reclaim_of, with_parts, words_of
from ipy_gpuguard.diagnosis import Diagnosis, Kind, Remedy
from ipy_gpuguard.protocol import (
    CARD_MIME,
    CONTROLS_MIME,
    FREE_MEMORY,
    Action,
    ActionArgs,
    ActionOffer,
    to_json,
)
from ipy_gpuguard.record import Reclaimed
from ipy_gpuguard.ui.card import CardControls, StaticCard
from ipy_gpuguard.ui.card_render import card_html, card_text

FREE = Remedy(
    "free_memory",
    "Free GPU memory",
    "Tracebacks pin tensors.",
    ("Delete big objects.",),
    action="free_memory",
)
BATCH = Remedy(
    "smaller_batch",
    "Use a smaller batch size",
    "Memory grows with the batch.",
    ("Halve it.",),
    action="retry",
)
GROWTH = Remedy(
    "memory_growth", "Memory growth", "Take what is used.", note="Needs a kernel restart."
)
DIAGNOSIS = Diagnosis(
    rule_id="oom.tf.tensor",
    kind=Kind.OUT_OF_MEMORY,
    title="Out of GPU memory",
    summary="TensorFlow could not allocate 512 MiB on GPU:0.",
    facts={
        "shape": (256, 1024, 1024),
        "dtype": "half",
        "requested_bytes": 512 * 1024**2,
        "op": "<script>alert(1)</script>",
    },
    remedies=(
        BATCH,
        FREE,
        GROWTH,
        Remedy("stale_process", "Stop the other process", "It holds memory."),
    ),
    evidence=("GPU 0 (T4): peak 15.0 GiB of 16.0 GiB (94%) before the failure.",),
)
CARD = with_parts(
    base_card(DIAGNOSIS, "card-1", (), (), "cell-a", 7),
    CardParts(reclaim_of(Reclaimed(100, 900, 300, 4)), can_free_memory=True),
)


def test_card_text_golden():
    assert card_text(CARD) == (
        "ipy_gpuguard · Out of GPU memory [oom.tf.tensor]\n"
        "TensorFlow could not allocate 512 MiB on GPU:0.\n"
        "  tensor shape            [256, 1024, 1024]\n"
        "  dtype                   half\n"
        "  allocation that failed  512 MiB\n"
        "  op                      <script>alert(1)</script>\n"
        "  · GPU 0 (T4): peak 15.0 GiB of 16.0 GiB (94%) before the failure.\n"
        "Freed 600 B; the allocator holds 200 B more than before the cell (variables the cell made, like an optimizer's on a model's first fit, or memory the framework keeps).\n"
        "What to do:\n"
        "  1. Use a smaller batch size: Memory grows with the batch.\n"
        "     - Halve it.\n"
        "  2. Free GPU memory: Tracebacks pin tensors.\n"
        "     - Delete big objects.\n"
        "  3. Memory growth: Take what is used.\n"
        "     (Needs a kernel restart.)\n"
        "  Also: Stop the other process."
    )


def test_card_html_escapes_what_came_from_the_error():
    html = card_html(CARD)
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert html.count("<details>") == 4  # every remedy folds open on click, no kernel needed
    assert '<ul style="white-space:pre-wrap">' in html  # stacks keep their indentation


def test_card_data_is_json_with_typed_facts_and_the_free_memory_action():
    data = to_json(CARD)
    assert data["rule_id"] == "oom.tf.tensor"
    assert data["cell_id"] == "cell-a"
    assert data["execution_count"] == 7
    shape, _, requested, _ = data["facts"]
    assert shape == {
        "name": "shape",
        "label": "tensor shape",
        "value": [256, 1024, 1024],
        "unit": None,
        "text": "[256, 1024, 1024]",
    }
    assert requested["unit"] == "bytes"
    assert requested["value"] == 512 * 1024**2
    assert data["remedies"][0] == {
        "id": "smaller_batch",
        "title": "Use a smaller batch size",
        "why": "Memory grows with the batch.",
        "steps": ["Halve it."],
        "action": "retry",
        "note": "",
        "links": [],
    }
    assert data["reclaimed"] == {
        "pending": False,
        "freed_bytes": 600,
        "held_bytes": 200,
        "frames_cleared": 4,
    }
    assert data["actions"] == [
        {
            "action": "free_memory",
            "label": "Free GPU memory",
            "batch_size": None,
            "enabled": True,
            "reason": "",
        }
    ]


def test_static_card_bundle_has_text_html_and_the_vendor_json():
    bundle = StaticCard(CARD)._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html", CARD_MIME}
    assert bundle[CARD_MIME] == to_json(CARD)


def test_a_widget_button_sends_its_action_to_the_dispatcher_and_shows_what_came_back():
    sent = []

    def send(action):
        sent.append(action)
        controls.show(CARD, "Retry with batch size 16: carried out")

    controls = CardControls(CARD, send)
    assert [button.description for button in controls.button_row.children] == ["Free GPU memory"]
    controls.button_row.children[0].click()
    assert sent == [Action(FREE_MEMORY, "card-1", ActionArgs(None))]
    assert "Retry with batch size 16: carried out" in controls.status.value
    controls.close()


def test_the_controls_hold_no_words_of_the_card_and_never_repeat_its_lines():
    """Issue 21: the card was one widget display, so its words were lost wherever the widget
    could not be drawn (nbconvert offline, a restarted kernel); the controls hold only buttons."""
    controls = CardControls(CARD, lambda action: None)
    bundle = controls._repr_mimebundle_()
    assert set(bundle) == {"application/vnd.jupyter.widget-view+json", CONTROLS_MIME, "text/plain"}
    assert bundle["text/plain"] == ""
    assert bundle[CONTROLS_MIME] == {"card": CARD.id}  # the lab extension's mark: no words
    freed = card_text(CARD).splitlines()[-6]  # a line of the card: not said twice
    controls.show(CARD, freed)
    assert controls.status.value == ""
    controls.close()


def test_a_disabled_action_shows_its_reason_and_sends_nothing():
    disabled = replace(
        CARD,
        actions=(ActionOffer(FREE_MEMORY, "Free GPU memory", None, False, "a retry is running"),),
    )
    sent = []
    controls = CardControls(disabled, sent.append)
    (button,) = controls.button_row.children
    assert button.disabled
    assert button.tooltip == "a retry is running"
    controls.click(FREE_MEMORY)
    assert sent == []
    assert "a retry is running" in controls.status.value
    controls.close()


def test_a_failing_action_is_one_line_under_the_buttons():
    def broken(action):
        raise RuntimeError("allocator gone")

    controls = CardControls(CARD, broken)
    controls.click(FREE_MEMORY)
    assert "Free GPU memory failed: RuntimeError: allocator gone" in controls.status.value
    assert isinstance(controls.widget, widgets.VBox)
    controls.close()


def test_a_search_that_fixed_the_cell_says_so_in_its_lasting_forms():
    """Issue 14, 21: the text and HTML of a successful --find-max card said nothing of it."""
    from ipy_gpuguard.protocol import AttemptRecord, RetryOffer, RetryState, RetryVerdict

    offer = RetryOffer(64, 512, None, "", (), (), ())
    attempts = (
        AttemptRecord(64, "fits", None, None),
        AttemptRecord(128, "out_of_memory", None, None),
        AttemptRecord(96, "fits", None, None),
    )
    verdict = RetryVerdict("fixed", 96, None, searched=True, remembered=False)
    card = replace(CARD, retry=RetryState(offer, attempts, verdict, None, running=False))
    card = replace(card, words=words_of(card))
    expected = "Fixed: batch size 96 fits, the largest of 3 tried by the search for the largest"
    assert expected in card_text(card)
    assert expected in card_html(card)
    assert "batch size 128: out of memory" in card_text(card)


def test_a_card_whose_buttons_cannot_be_shown_leaves_no_widget_behind(monkeypatch):
    """Issue 22 item 18: a failing card display leaked its 24 widgets."""
    import ipywidgets.widgets.widget as widget_module

    from ipy_gpuguard.shell import card_display

    shown = []

    def failing_display(obj, display_id):
        if display_id.endswith("-controls"):
            raise OSError(32, "Broken pipe")  # the frontend went away as the card was shown
        shown.append(display_id)
        return card_display.DisplayHandle(display_id)

    monkeypatch.setattr(card_display, "display", failing_display)
    before = len(widget_module._instances)
    with pytest.raises(OSError, match="Broken pipe"):  # the display's failure reaches the caller
        card_display.WidgetDisplay(CARD, lambda action: None)
    assert shown == ["card-1"]
    assert len(widget_module._instances) == before


def test_controls_that_fail_to_build_leave_no_widget_behind(monkeypatch):
    before = len(widget_module_instances())
    monkeypatch.setattr(widgets, "Button", _failing)
    with pytest.raises(RuntimeError, match="no comm"):
        CardControls(CARD, lambda action: None)
    assert len(widget_module_instances()) == before


def _failing(*args, **kwargs):
    raise RuntimeError("no comm")


def widget_module_instances():
    import ipywidgets.widgets.widget as widget_module

    return widget_module._instances


def test_the_html_cards_retry_and_verdict_are_inside_its_border_and_a_stack_is_one_item():
    """Issue 35 item 16: the HTML card's retry and verdict showed outside its coloured border,
    and the hang card's stack as one bullet per line."""
    from html.parser import HTMLParser

    from tests.cards.test_build import card_for, request_for

    diagnosis, _ = card_for("ResourceExhaustedError: OOM when allocating tensor")
    request = request_for(diagnosis, fits_below=100)
    request.retry.auto(12, find_max=False, report=lambda attempt: None)
    _, card = card_for("ResourceExhaustedError: OOM when allocating tensor", request)
    stack = (
        "No progress for 12 s (limit 10 s).",
        "main thread:",
        "  <cell 4>, line 3, in <module>",
        "  -> inside keras",
        "  waits in threading.py, line 331, in wait",
    )
    card = replace(card, evidence=stack)

    class Bordered(HTMLParser):
        """The text inside the div with the coloured border, and the evidence's items."""

        def __init__(self):
            super().__init__()
            self.depth, self.border_at, self.inside, self.items = 0, None, [], []
            self.in_item = False

        def handle_starttag(self, tag, attrs):
            self.depth += tag == "div"
            if tag == "div" and "border-left" in dict(attrs).get("style", ""):
                self.border_at = self.depth
            if tag == "li":
                self.items.append("")
                self.in_item = True

        def handle_endtag(self, tag):
            self.in_item = self.in_item and tag != "li"
            if tag == "div":
                if self.depth == self.border_at:
                    self.border_at = None
                self.depth -= 1

        def handle_data(self, data):
            if self.border_at is not None:
                self.inside.append(data)
            if self.in_item:
                self.items[-1] += data

    parsed = Bordered()
    parsed.feed(card_html(card))
    inside = "".join(parsed.inside)
    verdict = card.words.verdict[0]
    assert verdict.startswith("Fixed: batch size")
    assert verdict in inside
    assert "What to do" in inside
    stack_items = [item for item in parsed.items if item.startswith("main thread:")]
    assert stack_items == ["\n".join(stack[1:])]
    text = card_text(card)
    assert "  · main thread:\n      <cell 4>, line 3, in <module>\n" in text
    assert text.count("  · ") == 2 + text.count("  · ", text.index("What to do"))
