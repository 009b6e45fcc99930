"""The card: golden text, escaped HTML, the JSON for the lab extension, and the widget's button."""

from __future__ import annotations

import ipywidgets as widgets

from ipy_gpuguard.diagnosis import Diagnosis, Kind, Remedy
from ipy_gpuguard.reclaim import Reclaimed
from ipy_gpuguard.ui.card import RemediationCard, StaticCard
from ipy_gpuguard.ui.card_render import CARD_MIME, CardView, card_data, card_html, card_text

FREE = Remedy(
    "free_memory",
    "Free the memory",
    "Tracebacks pin tensors.",
    ("Delete big objects.",),
    action="free_memory",
)
BATCH = Remedy(
    "smaller_batch",
    "Use a smaller batch size",
    "Memory grows with the batch.",
    ("Halve it.",),
    action="retry_smaller_batch",
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
CARD = CardView(DIAGNOSIS, Reclaimed(100, 900, 300, 4))


def test_card_text_golden():
    assert card_text(CARD) == (
        "ipy_gpuguard · Out of GPU memory [oom.tf.tensor]\n"
        "TensorFlow could not allocate 512 MiB on GPU:0.\n"
        "  tensor shape            [256, 1024, 1024]\n"
        "  dtype                   half\n"
        "  allocation that failed  512 MiB\n"
        "  op                      <script>alert(1)</script>\n"
        "  · GPU 0 (T4): peak 15.0 GiB of 16.0 GiB (94%) before the failure.\n"
        "Freed 600 B; the allocator still holds 200 B more than before the cell (variables of the notebook, or memory the framework keeps): a retry in this kernel may fail again, a kernel restart frees it all.\n"
        "What to do:\n"
        "  1. Use a smaller batch size: Memory grows with the batch.\n"
        "     - Halve it.\n"
        "  2. Free the memory: Tracebacks pin tensors.\n"
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


def test_card_data_is_json_with_stable_keys():
    data = card_data(CARD)
    assert data["rule_id"] == "oom.tf.tensor"
    assert data["facts"]["shape"] == [256, 1024, 1024]
    assert data["remedies"][0] == {
        "id": "smaller_batch",
        "title": "Use a smaller batch size",
        "why": "Memory grows with the batch.",
        "steps": ["Halve it."],
        "action": "retry_smaller_batch",
        "note": "",
        "links": [],
    }
    assert data["reclaimed"] == {"freed_bytes": 600, "held_bytes": 200, "frames_cleared": 4}


def test_static_card_bundle_has_text_html_and_the_vendor_json():
    bundle = StaticCard(CARD)._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html", CARD_MIME}


def test_widget_card_offers_buttons_only_for_actions_it_can_do():
    calls = []
    card = RemediationCard(CARD, {"free_memory": lambda: calls.append(1) or "Freed 1.00 GiB."})
    assert [button.description for button in card.buttons] == ["Free GPU memory"]
    card.buttons[0].click()
    assert calls == [1]
    assert "Freed 1.00 GiB." in card.status.value
    bundle = card._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert CARD_MIME in bundle
    assert "text/html" in bundle
    assert bundle["text/plain"].startswith("ipy_gpuguard · Out of GPU memory")
    card.widget.close()


def test_a_failing_action_is_one_line_on_the_card():
    def broken():
        raise RuntimeError("allocator gone")

    card = RemediationCard(CARD, {"free_memory": broken})
    assert card.act("free_memory") == "Free GPU memory failed: RuntimeError: allocator gone"
    assert "allocator gone" in card.status.value
    assert isinstance(card.widget, widgets.VBox)
    card.widget.close()
