"""The heartbeat tells a search's watch when each fit begins and ends, and nothing more: it
keeps Keras' callbacks asynchronous, hears no step for it, and never raises into a fit."""

from __future__ import annotations

import logging

from ipy_gpuguard.retry.probe import FitWatch
from ipy_gpuguard.watchdog.keras_hooks import FitWatchers, heartbeat_callback_class
from ipy_gpuguard.watchdog.progress import StepRecorder


class Callback:  # Keras' Callback, as far as the heartbeat uses it
    async_safe = False
    model: object = None
    params: dict | None = None


def test_a_watch_keeps_keras_asynchronous_and_notes_each_fit_begun_and_ended():
    watch = FitWatch()
    heartbeat = heartbeat_callback_class(Callback)(StepRecorder(), watch)
    heartbeat.model, heartbeat.params = object(), {"steps": 1}
    assert heartbeat.async_safe is True  # Keras 3 may still dispatch callbacks asynchronously
    heartbeat.on_train_begin()
    for step in range(10):
        heartbeat.on_train_batch_end(step)  # no step ends a run
    assert watch.began == 1
    assert not watch.all_ended  # a fit cut by an error never reaches its end
    assert watch.one_batch
    heartbeat.on_train_end()
    assert watch.all_ended


def test_a_watchers_own_error_never_reaches_the_persons_fit():
    """A watcher runs inside the person's ``fit``: an error of the guard's there went into
    their ``except``. The watchers after it are still told."""

    class Failing:
        def fit_began(self, model, arguments, epoch_steps):
            raise NotImplementedError("the guard's own")

        fit_ended = step_ended = epoch_ended = fit_began

    watch = FitWatch()
    heartbeat = heartbeat_callback_class(Callback)(StepRecorder(), FitWatchers((Failing(), watch)))
    heartbeat.model, heartbeat.params = object(), {"steps": 3}
    heartbeat.on_train_begin()
    heartbeat.on_train_batch_end(0)
    heartbeat.on_epoch_end(0)
    heartbeat.on_train_end()
    assert (watch.began, watch.all_ended) == (1, True)


def test_a_watchers_error_prints_nothing_where_the_notebook_logs_at_info(caplog):
    """``logging.basicConfig(level=logging.INFO)`` is common in notebooks: the guard's
    traceback, with the person's frame in it, was printed into their cell."""

    class Failing:
        def fit_began(self, model, arguments, epoch_steps):
            raise NotImplementedError("the guard's own")

    with caplog.at_level(logging.INFO):
        FitWatchers((Failing(),)).fit_began(object(), {}, None)
    assert caplog.records == []
