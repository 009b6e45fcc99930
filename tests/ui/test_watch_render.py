"""The hang card's figures: simulated ones are labelled and prove nothing (issue 14, 22)."""

from __future__ import annotations

import pytest

from ipy_gpuguard.cards.stall import stall_facts
from ipy_gpuguard.record import PanelView, WatchView
from ipy_gpuguard.telemetry import DeviceInfo, DeviceReading, DeviceSample, Sample
from ipy_gpuguard.ui import render
from ipy_gpuguard.watchdog import ProgressSnapshot, Stall
from ipy_gpuguard.watchdog.stacks import StackReport

GIB = 2**30


def stalled(simulated: bool, utilisation: int) -> PanelView:
    info = DeviceInfo(0, "GPU", 8 * GIB, simulated=simulated)
    history = tuple(
        Sample(t, (DeviceSample(0, DeviceReading(GIB, 8 * GIB, utilisation, 80, 225.0)),))
        for t in (1.0, 2.0, 3.0)
    )
    stall = Stall(100.5, 103.0, 2.0, 3, "fit", (0.1,), 0.1, StackReport(()))
    watch = WatchView(ProgressSnapshot(steps=3, last_progress_at=100.5), 100.0, 103.0, stall)
    return PanelView(
        "simulated" if simulated else "nvml", "", (info,), history, (), 3.0, watch=watch
    )


def test_simulated_figures_say_so_on_their_line():
    sample = DeviceSample(0, DeviceReading(GIB, 8 * GIB, 100, 80, 225.0))
    assert render.device_stats_text(sample, simulated=True).endswith(
        "util 100% · 80 °C · 225 W (simulated)"
    )
    assert not render.device_stats_text(sample).endswith("(simulated)")


def test_a_simulated_gpu_draws_no_conclusion_in_the_hang_card():
    view = stalled(simulated=True, utilisation=100)
    assert view.watch is not None
    stall = view.watch.stall
    (line,) = [line for line in stall_facts(stall, view.gpus_during(stall)) if "GPU 0" in line]
    assert line == "GPU 0 utilisation during the stall: 100% (simulated)"
    assert view.hang_evidence().gpu_state is None


@pytest.mark.parametrize(("utilisation", "state"), [(100, "busy"), (3, "idle"), (50, None)])
def test_a_real_gpu_during_the_stall_is_judged_busy_or_idle(utilisation, state):
    assert stalled(simulated=False, utilisation=utilisation).hang_evidence().gpu_state == state


def test_a_stall_the_person_interrupted_says_so_on_its_card():
    """Issue 21: after Interrupt the live hang card still said "Press the stop button"."""
    from dataclasses import replace

    from ipy_gpuguard.cards import hang_card

    going = stalled(simulated=False, utilisation=3)
    stall = going.watch.stall
    live = hang_card(going, stall, "h1", None, 5)
    assert live.notes[0].startswith("Press the stop button")
    interrupted = replace(going, finished=True, ended_with="KeyboardInterrupt")
    ended = hang_card(interrupted, stall, "h1", None, 5)
    assert ended.notes == ("Interrupted (the stop button, or Interrupt).",)
    came_back = replace(
        going,
        watch=replace(going.watch, stall=None, past_stalls=(replace(stall, resumed_at=104.0),)),
    )
    assert hang_card(came_back, came_back.watch.past_stalls[0], "h1", None, 5).notes == (
        "Progress came back.",
    )


def test_the_panel_leaves_the_stall_to_the_card_where_a_frontend_shows_it():
    """Issue 21: in Lab the hang showed twice, in the panel's block and as the card."""
    from dataclasses import replace

    from ipy_gpuguard.ui.watch_render import hang_card_html, summary_lines

    view = replace(stalled(simulated=False, utilisation=3), finished=True, ended_with="")
    assert "No progress for" in hang_card_html(replace(view, finished=False))
    as_card = replace(view, stall_as_card=True)
    assert hang_card_html(replace(as_card, finished=False)) == ""
    (line,) = [line for line in summary_lines(as_card) if "No progress" in line]
    assert line.endswith("still stalled when it ended")
