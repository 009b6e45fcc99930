"""Run library code that may call into the person's, stopping it before any of theirs runs.

Tracing Keras' train step (:mod:`.compiled_step`) runs the Python of Keras and JAX. The model's
own pieces are read beforehand (:func:`.compiled_step.keras_only`), but the person may have
patched the libraries themselves: a method of a Keras class, a function of ``jax.nn`` that a
layer looks up as it runs, a context manager Keras enters, through a descriptor or a wrapper
of any kind. Rather than list every way in, a watch sees each Python frame the trace starts:
the first whose code is not of the libraries the trace runs on (Keras, its backend and what
they require, the standard library, the guard) is stopped as it starts, before its first line,
by an exception no library code catches (a ``BaseException``). The trace unwinds through
library frames (their ``finally`` blocks and context managers run, as for a Ctrl-C), and its
caller gets :class:`PersonsCode`. The watch stays on through that unwinding, so a second patch of
the person's that a library's ``finally`` calls after a stop is stopped too: on Python 3.12 and
later it is ``sys.monitoring``'s; before, a profile function and a trace function in turn
(Python takes either off as it raises).

A stop skips what the person's code would have done: their wrapper of a library's cleanup
leaves the library's state half put back. So the trace runs on a thread of its own, whose
state (Keras' scopes, JAX's trace state) ends with it. Only that thread is watched: the
person's other threads are not. Where the person profiles or traces their thread already
(``cProfile``, a debugger, coverage), nothing is traced.
"""

from __future__ import annotations

import _thread
import contextlib
import contextvars
import dis
import functools
import gc
import inspect
import operator
import re
import sys
import threading
import weakref
from collections.abc import Callable, Iterable
from importlib import metadata
from types import CodeType, FrameType, FunctionType, ModuleType
from typing import Any, NoReturn, TypeVar, cast

from ..watchdog.stacks import library_package
from .own_attributes import class_dict, classes_of

T = TypeVar("T")

#: What a distribution's requirement names first: ``numpy>=1.26`` is numpy's.
_REQUIREMENT_NAME = re.compile(r"[A-Za-z0-9._-]+")


class PersonsCode(Exception):
    """A trace would have run code of the person's (which did not run), or could not be
    watched: no trace is made."""


class _Reached(BaseException):
    """Stops a trace at the person's code: a ``BaseException``, which the libraries' ``except
    Exception`` lets through, and which the person's code, stopped before its first line, never
    meets."""


def without_persons_code(run: Callable[[], T], packages: Iterable[str]) -> T:
    """``run()``, watched, on a thread of its own: it may call the code of ``packages`` (and of
    what they require), the standard library's and the guard's; :class:`PersonsCode` where it
    was about to call other code, or where this thread is profiled or traced already. A hook
    the person set for every new thread (``threading.setprofile``) is not put on that one.

    The thread is its own so that what the libraries keep per thread (Keras' scopes, JAX's trace
    state) and leave half put back where a stop skipped a cleanup of the person's (their wrapper
    of a library's ``__exit__``) ends with it, and the person's thread carries on as before.
    The caller's context variables come along; what else ``run`` needs of the caller's thread
    it brings itself (:mod:`.thread_state`).

    Code of the person's that the interpreter itself runs while the trace does is theirs to run
    as it would without the guard, and is not watched inside: a finalizer (``__del__``, a weak
    reference's callback, a ``weakref.finalize``, a generator's ``finally`` as it is closed) as
    their objects are freed, a callback of the collector's. The collector is paused for the
    trace, so that it frees none of their objects inside it.
    """
    if sys.getprofile() is not None:
        raise PersonsCode("a profiler watches this thread")
    if sys.gettrace() is not None:  # a debugger would stop at the guard's exception
        raise PersonsCode("a debugger or a tracer watches this thread")
    watch = _Watch(trace_libraries(frozenset(packages)))
    collecting = gc.isenabled()
    gc.disable()  # no finalizer of the person's runs inside the trace: their objects wait
    try:
        return _on_a_thread_of_its_own(functools.partial(_watched, run, watch), watch)
    finally:
        if collecting:
            gc.enable()


def _on_a_thread_of_its_own(call: Callable[[], T], watch: _Watch) -> T:
    """``call()`` on a new thread, in a copy of this one's context; what it raised, raised
    here, as :class:`PersonsCode` where the watch stopped it (also where a library swallowed
    the stop, or wrapped it in an error of its own)."""
    outcome: list[tuple[bool, Any]] = []
    context = contextvars.copy_context()
    ended = _thread.allocate_lock()
    ended.acquire()

    def on_the_new_thread() -> None:
        try:
            outcome.append((True, context.run(call)))
        except BaseException as error:  # carried to the caller's thread
            outcome.append((False, error))
        finally:
            ended.release()

    # not threading's: it would run the person's ``threading.setprofile`` hook in the thread
    _thread.start_new_thread(on_the_new_thread, ())
    try:
        ended.acquire()
    except BaseException:  # a Ctrl-C: the trace stops as its next frame starts
        watch.abandoned = True
        raise
    returned, value = outcome[0]
    if watch.stopped is not None:
        raise PersonsCode(f"the trace reached code of the person's: {watch.stopped}")
    if not returned:
        raise value
    return cast(T, value)


def _watched(run: Callable[[], T], watch: _Watch) -> T:
    """``run()`` under the watch, on the trace's thread."""
    tool = _free_tool()
    return _profiled(run, watch) if tool is None else _monitored(run, watch, tool)


class _Watch:
    """What a trace may run, judged as each frame starts, and where it was stopped."""

    def __init__(self, allowed: frozenset[str]) -> None:
        self._allowed = allowed
        self._verdicts: dict[CodeType, bool] = {}
        self._on_their_own = _collector_callbacks()
        #: A frame of the person's that the interpreter runs on its own: not watched inside.
        self.running_on_its_own: FrameType | None = None
        self.stopped: str | None = None
        #: The caller no longer waits (a Ctrl-C): every frame is stopped as it starts.
        self.abandoned = False

    def started(self, code: CodeType, frame: FrameType) -> str | None:
        """A frame of ``code`` starts: what it is, where it is code of the person's that the
        trace calls, to be stopped (:meth:`stop`)."""
        if self.abandoned:
            return "none: the caller was interrupted"
        verdict = self._verdicts.get(code)
        if verdict is None:
            verdict = self._verdicts[code] = _of_libraries(code, frame, self._allowed)
        if verdict:
            if code.co_name == "__del__" and _finalizing(code, frame):
                self.running_on_its_own = frame  # a library's finalizer, with what it calls
            return None
        caller = frame.f_back
        if (
            code in self._on_their_own
            or _finalizing(code, frame)
            or (caller is not None and caller.f_code is _FINALIZER_CALL)
            or _resumed(code, frame)
        ):
            self.running_on_its_own = frame
            return None
        return f"{code.co_name} ({code.co_filename})"

    def stop(self, reached: str) -> NoReturn:
        """Stop the frame of the person's code ``reached``, and the trace with it."""
        self.stopped = self.stopped or reached  # the first: what came after ran because of it
        raise _Reached(reached)


def _profiled(run: Callable[[], T], watch: _Watch) -> T:
    """``run()`` under a profile function (Python 3.10 and 3.11), which judges each frame as it
    starts. Python takes a profile or trace function off as it raises, so a stop is raised by
    one of the two as the other is put on, which judges the frames that come after: the watch
    stays on as the stop unwinds. Either raises as the frame starts, before its first
    instruction (on 3.11 a first line that is a ``try`` lies inside it)."""

    def profile(frame: FrameType, event: str, argument: Any) -> None:
        if watch.running_on_its_own is not None:
            if frame is watch.running_on_its_own and event == "return":
                watch.running_on_its_own = None
            return
        if event == "call":
            stop_if_theirs(frame, lambda: sys.settrace(trace))

    def trace(frame: FrameType, event: str, argument: Any) -> Callable[..., Any] | None:
        if watch.running_on_its_own is not None:
            return None  # a frame inside it: its own frame's ``ended`` sees it return
        stop_if_theirs(frame, lambda: sys.setprofile(profile))
        if frame is watch.running_on_its_own:
            frame.f_trace_lines = False
            return ended
        return None

    def ended(frame: FrameType, event: str, argument: Any) -> Callable[..., Any]:
        if event == "return":
            watch.running_on_its_own = None
        return ended

    def stop_if_theirs(frame: FrameType, put_on_the_other: Callable[[], None]) -> None:
        try:
            reached = watch.started(frame.f_code, frame)
        except Exception as error:  # near the recursion limit: a stop, not a watch taken off
            reached = f"none: the watch failed ({type(error).__name__})"
        if reached is not None:
            with contextlib.suppress(Exception):  # an audit hook of theirs may refuse it
                put_on_the_other()
            watch.stop(reached)

    sys.setprofile(profile)
    try:
        return run()
    finally:
        watched = sys.getprofile() is profile or sys.gettrace() is trace
        sys.setprofile(None)
        sys.settrace(None)
        if not watched and watch.stopped is None:  # Python took it off as it failed to call it
            watch.stopped = "none: the watch was taken off"


def _monitored(run: Callable[[], T], watch: _Watch, tool: int) -> T:
    """``run()`` under ``sys.monitoring`` (Python 3.12 and later), which stays on as its
    callback raises: a library's ``finally`` that calls code of the person's after a stop is
    stopped too. Its events come from every thread: the person's other threads pass."""
    monitoring: Any = sys.monitoring  # type: ignore[attr-defined,unused-ignore]
    owner = threading.get_ident()
    # a frame that starts, and one that carries on where it gave way or is thrown into (a
    # generator of the person's, closed by the collector)
    events = (monitoring.events.PY_START, monitoring.events.PY_RESUME, monitoring.events.PY_THROW)

    def started(code: CodeType, offset: int, *exception: BaseException) -> None:
        if threading.get_ident() != owner:
            return
        frame = sys._getframe(1)  # the frame that starts or carries on
        if watch.running_on_its_own is not None:
            if _within(frame, watch.running_on_its_own):
                return
            watch.running_on_its_own = None
        reached = watch.started(code, frame)
        if reached is not None:
            watch.stop(reached)

    for event in events:
        monitoring.register_callback(tool, event, started)
    monitoring.set_events(tool, functools.reduce(operator.or_, events))
    try:
        return run()
    finally:
        monitoring.set_events(tool, 0)
        for event in events:
            monitoring.register_callback(tool, event, None)
        monitoring.free_tool_id(tool)


#: The tool identifiers ``sys.monitoring`` leaves to tools other than debuggers, coverage,
#: profilers and optimizers.
_OTHER_TOOLS = (3, 4)


def _free_tool() -> int | None:
    """A ``sys.monitoring`` tool identifier, claimed for the guard; ``None`` before Python
    3.12, or where none is free."""
    monitoring: Any = getattr(sys, "monitoring", None)
    if monitoring is None:
        return None
    for tool in _OTHER_TOOLS:
        if monitoring.get_tool(tool) is None:
            monitoring.use_tool_id(tool, "ipy_gpuguard")
            return tool
    return None


def _within(frame: FrameType | None, ancestor: FrameType) -> bool:
    """Whether ``frame`` runs inside ``ancestor`` (is it, or called from it)."""
    while frame is not None:
        if frame is ancestor:
            return True
        frame = frame.f_back
    return False


def _finalizing(code: CodeType, frame: FrameType) -> bool:
    """The frame is the ``__del__`` of the object it is called on (by whatever name the person
    wrote it, or wrapped), or a weak reference's callback, called with the reference whose
    object has just been freed."""
    if code.co_argcount < 1:
        return False  # not a function's frame, whose locals are Python's own mapping
    instance = frame.f_locals.get(code.co_varnames[0])
    if type(instance) is weakref.ref and instance() is None:
        return True
    for klass in classes_of(instance):
        finalizer = class_dict(klass).get("__del__")
        if finalizer is not None:
            return type(finalizer) is FunctionType and _FUNCTION_CODE.__get__(finalizer) is code
    return False


def _resumed(code: CodeType, frame: FrameType) -> bool:
    """A generator's (or coroutine's) frame that carries on from where it gave way, or (Python
    3.11) is closed before it started: one the person made before the trace, which the collector
    closes as it frees it. One the trace starts stands at its first ``RESUME`` (on 3.10 a close
    before the start looks the same, and is stopped: it would run none of their code)."""
    return bool(code.co_flags & _SUSPENDING) and frame.f_lasti != _first_resume(code)


#: The kinds of code whose frame is suspended and resumed.
_SUSPENDING = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


@functools.lru_cache(maxsize=1024)
def _first_resume(code: CodeType) -> int:
    """Where a frame of ``code`` stands as it first runs: its first ``RESUME`` (Python 3.11 and
    later), or before its first instruction (3.10)."""
    resume = dis.opmap.get("RESUME")
    if resume is None:
        return -1
    return next((each.offset for each in dis.get_instructions(code) if each.opcode == resume), -1)


#: A module's namespace, read through the module type's own descriptor.
_MODULE_NAMESPACE: Any = vars(ModuleType)["__dict__"]
#: A function's code, read through the function type's own descriptor.
_FUNCTION_CODE: Any = vars(FunctionType)["__code__"]
#: What calls the function a ``weakref.finalize`` holds, as its object is freed.
_FINALIZER_CALL = weakref.finalize.__call__.__code__


def _collector_callbacks() -> frozenset[CodeType]:
    """The code of the garbage collector's callbacks set now (signal handlers run on the main
    thread, never the trace's)."""
    functions = [getattr(each, "__func__", each) for each in gc.callbacks]
    codes = (getattr(function, "__code__", None) for function in functions)
    return frozenset(code for code in codes if isinstance(code, CodeType))


def _of_libraries(code: CodeType, frame: FrameType, allowed: frozenset[str]) -> bool:
    """Code in the files of ``allowed`` packages, the standard library's (frozen modules too),
    or code a library generated (a dataclass's ``__init__``, a named tuple's ``__new__``),
    judged by the module whose globals it runs in."""
    filename = code.co_filename
    if type(filename) is not str:  # a subclass's methods are theirs
        return False
    if filename.startswith("<frozen "):
        return filename[len("<frozen ") : -1].split(".")[0] in sys.stdlib_module_names
    if filename.startswith("<"):
        namespace = frame.f_globals  # read through dict's own methods: a subclass is theirs
        module_name = dict.get(namespace, "__name__")
        if type(module_name) is not str:  # a subclass's methods are theirs
            return False
        if (
            module_name.startswith("namedtuple_")
            and dict.get(namespace, "_tuple_new") is tuple.__new__
        ):
            return True  # a named tuple's __new__, which collections makes: no code of the person's
        module = dict.get(sys.modules, module_name)
        if not issubclass(type(module), ModuleType):  # never their ``__class__``
            return False
        module_namespace = _MODULE_NAMESPACE.__get__(module)
        source = dict.get(module_namespace, "__file__")
        return (
            type(source) is str
            and library_package(source) in allowed
            and namespace is module_namespace  # code that runs in the module, not in its name
        )
    return library_package(filename) in allowed


@functools.cache
def trace_libraries(packages: frozenset[str]) -> frozenset[str]:
    """The packages whose code a trace may run: ``packages`` (whichever distribution installed
    them: ``tensorflow`` from ``tensorflow-cpu``), those of what they require, however deep
    (extras left out), the standard library's and the guard's."""
    wanted: dict[str, metadata.Distribution] = {}
    waiting = [name for package in packages for name in _distributions_of(package)]
    while waiting:
        name = _normal(waiting.pop())
        if name in wanted:
            continue
        try:
            wanted[name] = distribution = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        for requirement in distribution.requires or []:
            found = _REQUIREMENT_NAME.match(requirement)
            if found and "extra ==" not in requirement:
                waiting.append(found.group(0))
    required = {package for each in wanted.values() for package in _packages_of(each)}
    return frozenset(required | packages | {"python", "ipy_gpuguard"})


def _distributions_of(package: str) -> list[str]:
    """The distributions that installed ``package``: the one of its name, else those the
    installed metadata names (``tensorflow-cpu``; all of them read, so only where needed)."""
    try:
        metadata.distribution(package)
    except metadata.PackageNotFoundError:
        return list(metadata.packages_distributions().get(package, ()))
    return [package]


def _packages_of(distribution: metadata.Distribution) -> set[str]:
    """The top-level packages a distribution installs: its ``top_level.txt``, else the first
    folder (or module) of its files of code, as Python 3.11's own metadata infers them."""
    listed = distribution.read_text("top_level.txt")
    if listed:
        return set(listed.split())
    return {
        file.parts[0].removesuffix(".py")
        for file in distribution.files or ()
        if file.suffix in (".py", ".so", ".pyd")
        and file.parts[0] != ".."
        and not file.parts[0].endswith((".dist-info", ".data"))
    }


def _normal(distribution: str) -> str:
    """A distribution's name as its metadata is looked up: ``ml_dtypes`` is ``ml-dtypes``."""
    return re.sub(r"[-_.]+", "-", distribution).lower()
