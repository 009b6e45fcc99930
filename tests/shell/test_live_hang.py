"""A stall's card, shown from the watchdog's thread while the cell runs: on the page, never in
a ``%%capture`` of the cell (which swaps the shell's publisher while the cell's code runs)."""

from __future__ import annotations

from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from ipy_gpuguard.protocol import CARD_MIME
from ipy_gpuguard.shell.live_hang import LiveHangCards

from ..ui.test_watch_render import stalled


def test_a_stalls_card_reaches_the_page_past_the_persons_capture():
    InteractiveShell.instance()
    with capture_output() as page:
        cards = LiveHangCards("cell-1", 5)  # as the cell begins
        with capture_output() as persons:  # the cell's %%capture
            cards.changed(stalled(simulated=False, utilisation=3))
            cards.changed(stalled(simulated=False, utilisation=3))  # the stall goes on
    assert persons.outputs == []
    shown, updated = page.outputs
    assert shown.data[CARD_MIME]["rule_id"].startswith("hang.")
    assert (shown.update, updated.update) == (False, True)
    assert shown.transient == updated.transient == {"display_id": shown.data[CARD_MIME]["id"]}
