from __future__ import annotations

import sys
import types

import keras
import pytest

from ipy_gpuguard.shell.reclaim import clear_keras_session, free_failure_memory

pytestmark = pytest.mark.tensorflow


class Tensor:
    """Stands for a tensor pinned by a failed call's frame."""


def test_freeing_releases_what_the_failed_call_held_and_keeps_the_namespace(shell):
    shell.run_cell(
        "import weakref\n"
        "from tests.shell.test_reclaim import Tensor\n"
        "kept = Tensor()\n"
        "def step():\n"
        "    batch = Tensor()\n"
        "    global pinned\n"
        "    pinned = weakref.ref(batch)\n"
        "    raise MemoryError('out of memory')\n"
        "step()\n"
    )
    error = shell.last_execution_result.error_in_exec
    assert shell.user_ns["pinned"]() is not None  # the traceback (and %debug's copy) hold it
    reclaimed = free_failure_memory(error, lambda: None, None)
    assert reclaimed.frames_cleared >= 2
    assert shell.user_ns["pinned"]() is None
    assert isinstance(shell.user_ns["kept"], Tensor)
    assert sys.last_value is None
    # the kernel still reads the error from the result for the reply's "error" status
    assert shell.last_execution_result.error_in_exec is error


def test_freeing_measures_the_allocator_against_its_baseline():
    readings = iter([900, 300])
    reclaimed = free_failure_memory(None, lambda: next(readings), baseline_bytes=100)
    assert reclaimed.freed_bytes == 600
    assert reclaimed.held_bytes == 200


def test_clearing_the_keras_session_keeps_the_dtype_policy():
    keras.config.set_dtype_policy("mixed_float16")
    try:
        layer = keras.layers.Dense(1)
        assert layer.name.startswith("dense")
        clear_keras_session(sys.modules)
        assert keras.config.dtype_policy().name == "mixed_float16"
        assert keras.layers.Dense(1).name == "dense"  # Keras' name counters were reset
    finally:
        keras.config.set_dtype_policy("float32")


def test_freeing_never_empties_a_mapping_the_frame_does_not_own(shell):
    """``exec(code, {}, results)``, and a shell whose namespace is not its globals (as
    ``IPython.embed()`` sets up): the frame's locals are the person's own dict (issue 14, 1)."""
    shell.run_cell(
        "results = {'kept': 1}\n"
        "exec(\"partial = 2\\nraise MemoryError('out of memory')\", {}, results)\n"
    )
    error = shell.last_execution_result.error_in_exec
    free_failure_memory(error, lambda: None, None)
    assert shell.user_ns["results"] == {"kept": 1, "partial": 2}


def test_freeing_keeps_the_namespace_of_an_embedded_shell():
    namespace, module_globals = {"kept": 1}, {"__name__": "__main__"}
    try:
        exec("partial = 2\nraise MemoryError('out of memory')", module_globals, namespace)
    except MemoryError as error:
        caught = error
    free_failure_memory(caught, lambda: None, None)
    assert namespace == {"kept": 1, "partial": 2}


def test_pytorchs_cached_blocks_go_back_to_the_driver_once_freed():
    """Issue 14, 7: the caching allocator kept what a failed attempt freed, out of NVML's sight."""
    calls = []
    cuda = types.SimpleNamespace(
        is_initialized=lambda: True, empty_cache=lambda: calls.append("empty_cache")
    )
    free_failure_memory(None, lambda: None, None, {"torch": types.SimpleNamespace(cuda=cuda)})
    assert calls == ["empty_cache"]
    idle = types.SimpleNamespace(is_initialized=lambda: False, empty_cache=lambda: calls.append(1))
    free_failure_memory(None, lambda: None, None, {"torch": types.SimpleNamespace(cuda=idle)})
    assert calls == ["empty_cache"]  # a CUDA that torch never set up is left alone
