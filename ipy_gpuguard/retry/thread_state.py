"""What Keras and JAX keep per thread, carried from the fit's thread to the trace's.

The guard traces Keras' train step on a thread of its own (:mod:`.trace_guard`). Keras keeps
its distribution, dtype policy and name counters per thread, and JAX the settings its context
managers make (``jax.default_device``, which ``keras.device`` sets; ``jax.enable_x64``; the
default matmul precision): without them the step would be traced for another device or
layout than the fit's. Keras' containers are copied, so that nothing the trace adds (a name
counted) reaches the fit's thread. Both are read only where the library is imported, through
its own modules; a version that keeps them elsewhere carries nothing.
"""

from __future__ import annotations

import collections
import copy
import sys
from dataclasses import dataclass
from typing import Any

#: Where Keras 3 keeps its state per thread.
KERAS_STATE = "keras.src.backend.common.global_state"
#: Where JAX keeps its settings, each with a value per thread where a context manager set one.
JAX_CONFIG = "jax._src.config"
#: The kinds of Keras' state copied for the trace (the rest it only reads).
_CONTAINERS = (list, dict, set, collections.defaultdict)


@dataclass(frozen=True)
class ThreadState:
    """Keras' state and JAX's settings of one thread."""

    keras: dict[str, Any]
    jax: dict[str, Any]

    @classmethod
    def of_this_thread(cls) -> ThreadState:
        """This thread's state, taken as the fit's thread calls for a trace."""
        tracker = getattr(sys.modules.get(KERAS_STATE), "GLOBAL_STATE_TRACKER", None)
        held = getattr(tracker, "__dict__", {})
        keras = {
            name: copy.copy(value) if type(value) in _CONTAINERS else value
            for name, value in dict.items(held)
        }
        return cls(keras, _jax_settings_of_this_thread())

    def put_on_this_thread(self) -> None:
        """Make this (new) thread's state the one taken, as JAX's context managers do."""
        tracker = getattr(sys.modules.get(KERAS_STATE), "GLOBAL_STATE_TRACKER", None)
        if tracker is not None:
            vars(tracker).update(self.keras)
        states = getattr(sys.modules.get(JAX_CONFIG), "config_states", {})
        for name, value in self.jax.items():
            setting = states[name]
            setting.set_local(value)
            hook = getattr(setting, "_update_thread_local_hook", None)
            if hook is not None:
                hook(value)


def _jax_settings_of_this_thread() -> dict[str, Any]:
    """The JAX settings a context manager set on this thread: each one's value here."""
    config = sys.modules.get(JAX_CONFIG)
    unset = getattr(getattr(config, "config_ext", None), "unset", None)
    states = getattr(config, "config_states", None)
    if unset is None or not isinstance(states, dict):
        return {}
    settings = {}
    for name, setting in states.items():
        value = setting.get_local() if hasattr(setting, "get_local") else unset
        if value is not unset:
            settings[name] = value
    return settings
