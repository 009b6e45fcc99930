"""The watch on a trace: code of the person's that the trace reaches never runs, and code of
theirs that the interpreter runs meanwhile (a finalizer, a signal handler) runs as it would."""

from __future__ import annotations

import copy
import functools
import gc
import json
import signal
import sys
import types
import weakref

import pytest

from ipy_gpuguard.retry.trace_guard import PersonsCode, trace_libraries, without_persons_code

#: A library's work that allocates for a while: the standard library's own code only.
WORK = [[{"key": list(range(20))} for _ in range(200)] for _ in range(20)]


def library_work() -> functools.partial:
    return functools.partial(copy.deepcopy, WORK)


def test_the_persons_code_a_library_calls_never_runs():
    ran = []

    def persons_default(value):
        ran.append(value)
        return str(value)

    with pytest.raises(
        PersonsCode, match="the trace reached code of the person's: persons_default"
    ):
        without_persons_code(functools.partial(json.dumps, {1j}, default=persons_default), ())
    assert ran == []
    assert sys.getprofile() is None


ONE_LINE_TRY = """
def persons_default(value):
    try: return str(value)
    finally: ran.append("finally")
"""


def test_a_function_of_the_persons_that_begins_with_a_try_is_stopped_outside_it():
    """Python 3.11 puts the first instruction of a one-line ``try`` inside the function's
    exception table: a stop raised there ran the person's ``finally`` (helper 21)."""
    namespace: dict = {"ran": []}
    exec(compile(ONE_LINE_TRY, "<the person's cell>", "exec"), namespace)
    with pytest.raises(PersonsCode, match="persons_default"):
        without_persons_code(
            functools.partial(json.dumps, {1j}, default=namespace["persons_default"]), ()
        )
    assert namespace["ran"] == []


def test_library_code_alone_runs_to_its_end():
    assert without_persons_code(library_work(), ()) == WORK
    assert sys.getprofile() is None


def test_a_thread_the_person_profiles_is_not_traced_and_keeps_its_profiler():
    def profiler(frame, event, argument):
        return None

    sys.setprofile(profiler)
    try:
        with pytest.raises(PersonsCode, match="a profiler watches this thread"):
            without_persons_code(library_work(), ())
        assert sys.getprofile() is profiler
    finally:
        sys.setprofile(None)


def test_a_hook_the_person_set_for_every_new_thread_never_runs_in_the_trace():
    """``threading.setprofile``: their profiler runs in each thread ``threading`` starts, and
    the trace's thread had been one (helper 22: their hook ran 20 times, and the forecast was
    refused)."""
    import threading

    heard = []
    threading.setprofile(lambda frame, event, argument: heard.append(event))
    try:
        assert without_persons_code(library_work(), ()) == WORK
    finally:
        threading.setprofile(None)
    assert heard == []


def test_a_thread_the_persons_debugger_traces_is_not_traced():
    """Their debugger would stop at the guard's exception in the frame it stopped."""
    previous = sys.gettrace()

    def debugger(frame, event, argument):
        return None

    sys.settrace(debugger)
    try:
        with pytest.raises(PersonsCode, match="a debugger or a tracer watches this thread"):
            without_persons_code(library_work(), ())
        assert sys.gettrace() is debugger
    finally:
        sys.settrace(previous)


def test_the_persons_finalizers_run_as_the_collector_frees_their_objects_during_a_trace(capfd):
    """A collection during the trace (here run by the trace itself) frees the person's objects: their ``__del__`` and
    ``weakref.finalize`` callbacks run, the code those call too, and nothing of the guard's is
    printed (an exception raised in a finalizer is printed as "Exception ignored")."""
    freed = []

    def note(what):
        freed.append(what)

    class Theirs:
        def __del__(self):
            note("__del__")

    class Cycle:
        pass

    def batches():
        try:
            yield 1
            yield 2
        finally:
            note("generator closed")

    gc.collect()  # only this test's garbage is left for the trace's collection
    first, second = Theirs(), Cycle()
    first.other, second.other = second, first  # freed only by the collector
    weakref.finalize(second, note, "finalize")
    started = batches()
    next(started)
    second.started = started
    del first, second, started
    assert without_persons_code(gc.collect, ()) > 0  # the collector, run by the trace
    assert sorted(freed) == ["__del__", "finalize", "generator closed"]
    assert "Exception ignored" not in capfd.readouterr().err


@pytest.mark.skipif(
    sys.version_info < (3, 11),
    reason="Python 3.10 enters a generator closed before it started as one that starts: it is "
    "stopped there (it would run none of the person's code)",
)
def test_a_generator_of_the_persons_closed_before_it_started_is_let_close(capfd):
    class Cycle:
        pass

    def batches():
        yield 1

    gc.collect()  # only this test's garbage is left for the trace's collection
    holder = Cycle()
    holder.me, holder.unstarted = holder, batches()
    del holder
    assert without_persons_code(gc.collect, ()) > 0
    assert "Exception ignored" not in capfd.readouterr().err


def test_a_generator_of_the_persons_that_the_trace_starts_is_stopped_as_it_starts():
    ran = []

    def persons_lines():
        ran.append("started")
        yield "line"

    with pytest.raises(PersonsCode, match="persons_lines"):
        without_persons_code(functools.partial(list, persons_lines()), ())
    assert ran == []


def test_the_persons_signal_handler_runs_when_its_signal_comes_during_a_trace():
    """Its handler, and the code that calls, run as without the guard (the signal is raised
    by the library's own call here, so that it comes while the trace is watched)."""
    caught = []

    def noted(number):
        caught.append(number)

    def handler(number, frame):
        noted(number)

    previous = signal.signal(signal.SIGUSR1, handler)
    try:
        without_persons_code(functools.partial(signal.raise_signal, signal.SIGUSR1), ())
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert caught == [signal.SIGUSR1]


def test_the_libraries_a_trace_may_run_are_those_required_however_deep():
    allowed = trace_libraries(frozenset({"IPython"}))
    assert {"IPython", "python", "ipy_gpuguard"} <= allowed
    assert {"traitlets", "jedi", "parso"} <= allowed  # IPython's, and jedi's for IPython
    assert "ipywidgets" not in allowed  # installed, but no requirement of IPython's


def refused_in(namespace: dict) -> None:
    """``persons_default`` exec'd in ``namespace`` (it notes each value in its ``ran``), and a
    trace that calls it: refused, naming it, and it never ran."""
    exec("def persons_default(value):\n    ran.append(value)\n    return str(value)\n", namespace)
    with pytest.raises(PersonsCode, match="persons_default"):
        without_persons_code(
            functools.partial(json.dumps, {1j}, default=namespace["persons_default"]), ()
        )
    assert namespace["ran"] == []


def test_code_made_in_the_notebook_under_a_librarys_name_is_the_persons():
    """``exec`` with globals that say ``__name__ = "json"`` makes code of the person's, not
    json's, whose module globals it does not run in."""
    made = {"__name__": "json", "ran": []}
    refused_in(made)


def test_the_watch_reads_a_module_name_of_the_persons_without_its_methods():
    """A ``str`` subclass as the ``__name__`` of code exec'd in the notebook: its
    ``startswith`` and ``__hash__`` had run in the watch (helper 21)."""
    asked = []

    class Name(str):
        def startswith(self, *prefixes):
            asked.append("startswith")
            return str.startswith(self, *prefixes)

        def __hash__(self):
            asked.append("__hash__")
            return str.__hash__(self)

    made = {"__name__": Name("json"), "ran": []}
    refused_in(made)
    assert asked == []


def test_a_dataclass_a_library_made_is_the_librarys():
    """Its ``__init__`` is code a library generated (``<string>``), run in the module's own
    globals."""
    import dataclasses

    @dataclasses.dataclass
    class Point:
        __module__ = "json"  # as json had defined it: its methods run in json's globals
        x: int

    assert without_persons_code(functools.partial(Point, 1), ()).x == 1


def test_a_named_tuples_new_is_collections_and_a_name_taken_from_it_is_not():
    """JAX makes named tuples at every step of a trace; their ``__new__`` is code collections
    generates (``<string>``), in a namespace of its own."""
    import collections

    pair = collections.namedtuple("Pair", "left right")
    assert without_persons_code(functools.partial(pair, 1, 2), ()) == (1, 2)
    made = {"__name__": "namedtuple_Pair", "ran": []}
    refused_in(made)


def test_a_finalizer_by_another_name_runs_as_its_object_is_freed_in_a_trace(capfd):
    """``__del__ = close``: the object freed by the trace's own work (its last reference
    dropped) closes as it would, and nothing of the guard's is printed."""
    closed = []

    class Connection:
        def close(self):
            closed.append("closed")

        __del__ = close

    holder = {"connection": Connection()}
    without_persons_code(functools.partial(dict.clear, holder), ())
    assert closed == ["closed"]
    assert "Exception ignored" not in capfd.readouterr().err


def test_a_weak_references_callback_runs_as_the_trace_frees_its_object(capfd):
    ran = []

    class Theirs:
        pass

    def persons_callback(reference):
        ran.append("called back")

    theirs = Theirs()
    holder = {"theirs": theirs}
    reference = weakref.ref(theirs, persons_callback)
    del theirs
    without_persons_code(functools.partial(dict.clear, holder), ())
    assert ran == ["called back"]
    assert reference() is None
    assert "Exception ignored" not in capfd.readouterr().err


def test_a_stop_a_library_swallows_still_refuses_the_trace():
    """asyncio runs a callback under ``except BaseException`` and only reports what it caught:
    the trace carries on past the stop, and is refused all the same."""
    import asyncio

    ran = []

    def persons_callback():
        ran.append("ran")

    loop = asyncio.new_event_loop()
    loop.set_exception_handler(lambda loop, context: None)  # asyncio's report, kept quiet
    try:
        handle = asyncio.Handle(persons_callback, (), loop)
        with pytest.raises(PersonsCode, match="persons_callback"):
            without_persons_code(handle._run, ())
    finally:
        loop.close()
    assert ran == []


def test_the_watch_reads_a_namespace_of_the_persons_without_its_methods():
    """Code exec'd in a ``dict`` subclass of theirs: the watch reads its name through
    ``dict``'s own ``get``, never theirs."""
    asked = []

    class Namespace(dict):
        def get(self, key, default=None):
            asked.append(key)
            return super().get(key, default)

    made = Namespace(__name__="json", ran=[])
    refused_in(made)
    assert asked == []


def test_code_of_the_persons_a_library_calls_as_it_unwinds_from_a_stop_is_stopped_too():
    """``ExitStack`` calls every callback as it unwinds, also after one raised: the second
    callback of the person's comes while the guard's stop is in flight (before Python 3.12, a
    profile function that raised would be off by then)."""
    import contextlib

    ran = []

    def first():
        ran.append("first")

    def second():
        ran.append("second")

    stack = contextlib.ExitStack()
    stack.callback(second)
    stack.callback(first)  # called first
    with pytest.raises(PersonsCode, match="first"):
        without_persons_code(functools.partial(stack.__exit__, None, None, None), ())
    assert ran == []


def test_a_librarys_finalizer_runs_the_persons_override_as_without_the_guard(capfd):
    """The standard library's ``Wave_write.__del__`` calls ``close``, which the person's
    subclass overrides: freed in the trace, the finalizer's call was stopped, and Python printed
    the guard's exception (helper 23). Finalizers run as without the guard."""
    import io
    import wave

    closed = []

    class Writer(wave.Wave_write):
        def close(self):
            closed.append("their close")

    holder = {"writer": Writer(io.BytesIO())}
    without_persons_code(functools.partial(dict.clear, holder), ())
    assert closed == ["their close"]
    assert "Exception ignored" not in capfd.readouterr().err


@pytest.mark.skipif(
    sys.version_info >= (3, 12),
    reason="sys.monitoring calls its callback at any depth: the watch is never taken off",
)
def test_a_watch_python_took_off_near_the_recursion_limit_refuses_the_trace():
    """Library code that recurses to the limit and goes on: Python fails to call the profile
    function and takes it off, and the trace had been made unwatched (helper 23)."""
    library = types.ModuleType("guard_tests_library")
    library.__file__ = json.__file__  # the standard library's, to the watch
    sys.modules[library.__name__] = library
    try:
        exec(compile(RECURSING_LIBRARY, "<library>", "exec"), vars(library))
        with pytest.raises(PersonsCode, match="the watch was taken off"):
            without_persons_code(functools.partial(library.recurse, 10**6), ())
    finally:
        del sys.modules[library.__name__]


RECURSING_LIBRARY = """
def deep(n):
    return 0 if n == 0 else 1 + deep(n - 1)

def recurse(n):
    try:
        return deep(n)
    except RecursionError:
        return None
"""


def test_the_persons_other_threads_run_on_unwatched_during_a_trace():
    """``sys.monitoring``'s events come from every thread: a thread of the person's that runs
    its own code while the trace does is let pass, and meets nothing of the guard's."""
    import threading

    ran, failed = [], []
    tracing, done = threading.Event(), threading.Event()

    def persons_step():
        ran.append(1)

    def persons_loop():
        try:
            while not done.is_set():
                persons_step()
                tracing.set()
        except BaseException as error:  # what the guard's exception would be
            failed.append(error)

    thread = threading.Thread(target=persons_loop)
    thread.start()
    tracing.wait(5)
    try:
        before = len(ran)
        assert without_persons_code(library_work(), ()) == WORK
        during = len(ran) - before
    finally:
        done.set()
        thread.join(5)
    assert failed == []
    assert during > 0
