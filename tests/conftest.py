from __future__ import annotations

import os
import signal
import tempfile
import threading

import pytest
from IPython.core.interactiveshell import InteractiveShell

# Real TensorFlow on CPU: quiet C++ logs, and TF's plain CPU allocator, which fails an impossible
# allocation at once where oneDNN's retries it for about 10 s (see DESIGN.md).
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
# The incident log's default lives in the Jupyter data directory: not the developer's own.
os.environ["JUPYTER_DATA_DIR"] = tempfile.mkdtemp(prefix="ipy_gpuguard-tests-")


def guard_threads() -> list[str]:
    return [
        thread.name for thread in threading.enumerate() if thread.name.startswith("ipy_gpuguard")
    ]


@pytest.fixture
def shell(monkeypatch):
    """A real IPython shell (no kernel: panels end as a text summary) with the extension loaded."""
    monkeypatch.setenv("GPUGUARD_SIMULATE", "8GiB")
    # Each shell test starts from Python's own SIGINT handler: a full run under load found it
    # ignored (SIG_IGN) after the browser tests, by a step not yet found, and a Stop then did
    # nothing. Its teardown checks that the test itself put it back.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    ip = InteractiveShell.instance()
    ip.run_line_magic("colors", "nocolor")
    ip.run_line_magic("load_ext", "ipy_gpuguard")
    yield ip
    ip.run_line_magic("unload_ext", "ipy_gpuguard")
    ip.config.pop("GPUGuard", None)  # the shell is shared: the next test starts from the defaults
    assert guard_threads() == []
    assert ip.custom_exceptions == ()  # unloading put IPython's handler back
    # A handler of the guard's left on SIGINT would swallow the next test's Stop.
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    assert handler is signal.default_int_handler, f"SIGINT's handler was left as {handler!r}"


def guard_magics(ip):
    return ip.magics_manager.registry["GPUGuardMagics"]
