"""Why a kernel died, from what it last recorded: the lab extension's post-mortem.

The causes and their remedies are the diagnosis catalog's (:mod:`ipy_gpuguard.diagnosis.deaths`);
this module reads the record's facts for it.
"""

from __future__ import annotations

from ..diagnosis.deaths import TDR_DELAY_S, likely_death
from ..protocol import KernelState, PostMortem


def post_mortem(state: KernelState) -> PostMortem:
    """The likely cause of a kernel's death, with what to do about it."""
    death = likely_death(
        state.last_rule_id,
        state.host_available_bytes,
        state.host_total_bytes,
        _step_outran_tdr(state),
    )
    why = death.why.format(
        available=_gib(state.host_available_bytes or 0),
        delay=TDR_DELAY_S,
        rule=state.last_rule_id or "",
    )
    return PostMortem(state, death.id, death.title, why, death.remedy_lines())


def _step_outran_tdr(state: KernelState) -> bool:
    """On Windows, a cell that was running with its last step older than TDR's delay."""
    return (
        state.platform == "win32"
        and state.running
        and state.last_step_at is not None
        and state.updated_at - state.last_step_at > TDR_DELAY_S
    )


def _gib(size: int) -> str:
    return f"{size / 2**30:.1f} GiB"
