"""A GPU's utilisation during a stall, judged once for every renderer."""

from __future__ import annotations

import pytest

from ipy_gpuguard.diagnosis import REMEDIES
from ipy_gpuguard.diagnosis.remedies import STEP_TIMEOUT_REMEDIES
from ipy_gpuguard.watchdog.judgement import BUSY, IDLE, gpu_state


@pytest.mark.parametrize(
    ("percent", "state"), [(100, BUSY), (90, BUSY), (89.9, None), (50, None), (10, IDLE), (0, IDLE)]
)
def test_utilisation_is_busy_idle_or_neither(percent, state):
    assert gpu_state(percent) == state


def test_the_remedies_for_steps_near_the_gpus_timeout_are_in_the_catalog():
    assert all(remedy in REMEDIES for remedy in STEP_TIMEOUT_REMEDIES)
