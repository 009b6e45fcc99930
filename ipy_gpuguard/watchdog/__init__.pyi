"""Progress and stalls of a guarded cell: heartbeats, the watchdog thread, the GPU's timeout.

Renders nothing itself: what it finds is data (:class:`Stall`, :class:`GpuTimeout`) that the
panel and the cards show. Imports no framework: Keras is wrapped only once the cell imported it.
"""

from .gpu_timeout import GpuTimeout, SystemTimeoutProbe, TimeoutProbe, step_warning
from .interrupt import WatchdogInterrupt
from .judgement import GpuDuringStall, HangEvidence
from .keras_hooks import FitWatcher, FitWatchers, KerasHooks
from .limits import StallLimits
from .monitor import RAISED, SIGNALLED, STUCK, InterruptState, Stall, Watchdog
from .progress import ProgressSnapshot, StepRecorder, heartbeat, set_active
from .stacks import FrameLine, StackReport, ThreadStack, capture_stacks

__all__ = [
    "RAISED",
    "SIGNALLED",
    "STUCK",
    "FitWatcher",
    "FitWatchers",
    "FrameLine",
    "GpuDuringStall",
    "GpuTimeout",
    "HangEvidence",
    "InterruptState",
    "KerasHooks",
    "ProgressSnapshot",
    "StackReport",
    "Stall",
    "StallLimits",
    "StepRecorder",
    "SystemTimeoutProbe",
    "ThreadStack",
    "TimeoutProbe",
    "Watchdog",
    "WatchdogInterrupt",
    "capture_stacks",
    "heartbeat",
    "set_active",
    "step_warning",
]
