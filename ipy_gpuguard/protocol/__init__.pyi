"""The versioned contract between the kernel and its frontends: cards, actions, kernel state.

Everything that crosses the kernel boundary is one of these frozen dataclasses turned into JSON
by :func:`to_json`. ``schema.json`` (shipped in the package) describes the same JSON for the
TypeScript side and for tests; a test keeps the two equal. Imports nothing of the rest of the
package, nor IPython or widgets: the server extension reads it too.
"""

from .actions import (
    ACTIONS,
    APPLY_TO_CELL,
    FIND_MAX,
    FREE_MEMORY,
    FRONTEND_ACTIONS,
    MAX_BATCH_SIZE,
    RESTART_AND_RUN_TO_HERE,
    RETRY,
    Action,
    ActionArgs,
    ActionResult,
    LiveCards,
    parse_action,
)
from .card import (
    CARD_MIME,
    NO_WORDS,
    ActionOffer,
    AttemptRecord,
    AttemptWords,
    BatchEdit,
    Card,
    CardRemedy,
    CardWords,
    DeviceSeries,
    Fact,
    Link,
    Reclaim,
    RetryOffer,
    RetryState,
    RetryTarget,
    RetryVerdict,
    TextEdit,
)
from .encode import SCHEMA_VERSION, schema, to_json
from .meter import KernelShare, MeterDevice, MeterReading
from .panel import LIVE_PANEL_METADATA, LivePanel
from .state import (
    DeviceState,
    KernelState,
    PostMortem,
    RunningCell,
    kernel_state_of,
    state_folder,
    state_path,
)

__all__ = [
    "ACTIONS",
    "APPLY_TO_CELL",
    "CARD_MIME",
    "FIND_MAX",
    "FREE_MEMORY",
    "FRONTEND_ACTIONS",
    "LIVE_PANEL_METADATA",
    "MAX_BATCH_SIZE",
    "NO_WORDS",
    "RESTART_AND_RUN_TO_HERE",
    "RETRY",
    "SCHEMA_VERSION",
    "Action",
    "ActionArgs",
    "ActionOffer",
    "ActionResult",
    "AttemptRecord",
    "AttemptWords",
    "BatchEdit",
    "Card",
    "CardRemedy",
    "CardWords",
    "DeviceSeries",
    "DeviceState",
    "Fact",
    "KernelShare",
    "KernelState",
    "Link",
    "LiveCards",
    "LivePanel",
    "MeterDevice",
    "MeterReading",
    "PostMortem",
    "Reclaim",
    "RetryOffer",
    "RetryState",
    "RetryTarget",
    "RetryVerdict",
    "RunningCell",
    "TextEdit",
    "kernel_state_of",
    "parse_action",
    "schema",
    "state_folder",
    "state_path",
    "to_json",
]
