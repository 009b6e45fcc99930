"""The live panel in a real IPython shell: one display, redrawn in place at most four times a
second from the guard's threads, and nothing drawn over the summary once it ended."""

from __future__ import annotations

import threading

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from ipy_gpuguard.protocol import LIVE_PANEL_METADATA
from ipy_gpuguard.shell.live_panel import MemoryPanel
from ipy_gpuguard.ui.summary import PanelSummary

from ..ui.test_render import view


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class Displays:
    """What the shell displayed, as a frontend receives it: displays and their updates."""

    def __init__(self, captured):
        self._captured = captured

    def __len__(self):
        return len(self._captured.outputs)

    def __getitem__(self, index):
        return self._captured.outputs[index]

    def __iter__(self):
        return iter(self._captured.outputs)


@pytest.fixture
def displays():
    InteractiveShell.instance()
    with capture_output() as captured:
        yield Displays(captured)


def live():
    return view(finished=False)


def test_a_panel_is_one_display_redrawn_in_place(displays):
    clock = Clock()
    panel = MemoryPanel(clock=clock)
    assert not panel.draw(live, force=True)  # nothing to redraw before it is shown
    panel.show(live())
    clock.now += 1
    assert panel.draw(live)
    shown, redrawn = displays
    assert shown.transient == redrawn.transient  # one display id
    assert (shown.update, redrawn.update) == (False, True)
    assert LIVE_PANEL_METADATA in redrawn.metadata
    assert "ipy-gpuguard-panel" in redrawn.data["text/html"]


def test_redraws_are_at_most_four_a_second(displays):
    clock = Clock()
    panel = MemoryPanel(clock=clock)
    panel.show(live())
    drawn, built = [], []

    def counted_view():
        built.append(1)
        return live()

    for _ in range(40):  # ten samples a second for four seconds
        drawn.append(panel.draw(counted_view))
        clock.now += 0.1
    assert panel.redraws == 1 + sum(drawn)
    assert 13 <= panel.redraws <= 4 * 4 + 1  # the first drawing and four a second after it
    assert len(built) == sum(drawn)  # no rendering work for the samples not drawn
    assert panel.draw(live, force=True)
    assert len(displays) == panel.redraws


def test_the_summary_stays_whatever_a_thread_was_drawing(displays):
    panel = MemoryPanel()
    panel.show(live())
    started, stop = threading.Event(), threading.Event()

    def sampler():
        started.set()
        while not stop.is_set():
            panel.draw(live, force=True)

    thread = threading.Thread(target=sampler)
    thread.start()
    started.wait()
    assert panel.end(PanelSummary(view()))
    drawn_at_end = len(displays)
    stop.set()
    thread.join()
    assert len(displays) == drawn_at_end  # no drawing after the end
    assert displays[-1].data["text/plain"].startswith("ipy_gpuguard · finished")
    assert not panel.draw(live, force=True)


def test_a_panel_that_ended_before_its_cell_ran_leaves_an_empty_output(displays):
    panel = MemoryPanel()
    panel.show(live())
    assert panel.end()
    assert displays[-1].data == {"text/plain": ""}
    assert panel.end(PanelSummary(view()))  # once ended, it stays as it was left
    assert displays[-1].data == {"text/plain": ""}
    assert not MemoryPanel().end()  # never shown: nothing to end
