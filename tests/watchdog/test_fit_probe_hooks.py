"""A watch-only probe (every guarded cell's) costs Keras' steps nothing; a probe that ends runs
hears each step, in fit's own thread."""

from __future__ import annotations

from ipy_gpuguard.retry.probe import PROBE_STEPS, FitProbe
from ipy_gpuguard.watchdog.keras_hooks import heartbeat_callback_class
from ipy_gpuguard.watchdog.progress import StepRecorder


class Callback:  # Keras' Callback, as far as the heartbeat uses it
    async_safe = False


def test_a_watch_keeps_keras_asynchronous_callbacks_and_hears_no_step():
    class CountedWatch(FitProbe):
        def train_step_ended(self) -> bool:
            raise AssertionError("a watch is not told of steps")

    heartbeat = heartbeat_callback_class(Callback)(StepRecorder(), CountedWatch(None))
    assert heartbeat.async_safe is True  # Keras 3 may still dispatch callbacks asynchronously
    heartbeat.on_train_batch_end(0)


def test_a_probe_that_ends_runs_is_synchronous_and_counts_steps():
    probe = FitProbe(PROBE_STEPS)
    heartbeat = heartbeat_callback_class(Callback)(StepRecorder(), probe)
    assert heartbeat.async_safe is False
    heartbeat.on_train_batch_end(0)
    assert probe.train_steps == 1
