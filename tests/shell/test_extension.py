from __future__ import annotations

import subprocess
import sys
import textwrap

from IPython.core.interactiveshell import InteractiveShell

import ipy_gpuguard


def registrations(ip):
    return (
        len(ip.events.callbacks["pre_run_cell"]),
        len(ip.events.callbacks["post_run_cell"]),
        len(ip.input_transformers_cleanup),
        sum(type(item).__module__.startswith("ipy_gpuguard") for item in ip.configurables),
        "gpuguard" in ip.magics_manager.magics["cell"],
        "gpuguard" in ip.magics_manager.magics["line"],
    )


def test_unload_removes_exactly_what_load_registered():
    ip = InteractiveShell.instance()
    before = registrations(ip)
    ipy_gpuguard.load_ipython_extension(ip)
    loaded = registrations(ip)
    try:
        assert loaded[:3] == (before[0] + 1, before[1] + 1, before[2] + 1)
        assert loaded[3] == before[3] + 2  # the GPUGuard settings and the magics
        assert loaded[4:] == (True, True)
    finally:
        ipy_gpuguard.unload_ipython_extension(ip)
    assert registrations(ip) == before


def test_loading_twice_is_harmless_and_reload_leaves_no_duplicates():
    ip = InteractiveShell.instance()
    before = registrations(ip)
    ipy_gpuguard.load_ipython_extension(ip)
    loaded = registrations(ip)
    ipy_gpuguard.load_ipython_extension(ip)
    assert registrations(ip) == loaded
    ipy_gpuguard.unload_ipython_extension(ip)
    ip.run_line_magic("load_ext", "ipy_gpuguard")
    for _ in range(3):
        ip.run_line_magic("reload_ext", "ipy_gpuguard")
    assert registrations(ip) == loaded
    ip.run_line_magic("unload_ext", "ipy_gpuguard")
    assert registrations(ip) == before


def test_loading_imports_no_framework_and_no_nvml():
    script = textwrap.dedent(
        """
        import sys
        from IPython.core.interactiveshell import InteractiveShell
        ip = InteractiveShell.instance()
        ip.run_line_magic("load_ext", "ipy_gpuguard")
        heavy = ("tensorflow", "keras", "torch", "jax", "pynvml")
        print(sorted(name for name in heavy if name in sys.modules))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_loading_leaves_the_session_to_the_first_guarded_cell():
    """What a session needs (the diagnosis, the retry, the cards, the widgets) is imported when
    a guarded cell first runs, not by ``%load_ext``: most of the guard's import time."""
    script = textwrap.dedent(
        """
        import sys
        from IPython.core.interactiveshell import InteractiveShell
        ip = InteractiveShell.instance()
        session_modules = (
            "ipy_gpuguard.shell.session", "ipy_gpuguard.diagnosis", "ipy_gpuguard.retry.attempts",
            "ipy_gpuguard.cards", "ipy_gpuguard.record", "ipy_gpuguard.ui.card", "ipywidgets",
        )
        ip.run_line_magic("load_ext", "ipy_gpuguard")
        print(sorted(name for name in session_modules if name in sys.modules))
        ip.run_cell("%%gpuguard --no-panel\\nx = 1")
        print(sorted(name for name in session_modules if name not in sys.modules))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    after_loading, missing_after_a_cell = result.stdout.splitlines()[-2:]
    assert after_loading == "[]"
    assert missing_after_a_cell == "['ipywidgets']"  # a terminal shows no widgets


def test_unload_stops_a_guard_left_running(shell):
    from ..conftest import guard_magics, guard_threads

    session = guard_magics(shell).session
    session.begin("a cell that never finished", session.options(interval_s=0.05))
    assert sorted(guard_threads()) == [
        "ipy_gpuguard-native-log",
        "ipy_gpuguard-sampler",
        "ipy_gpuguard-watchdog",
    ]
    # the fixture unloads the extension and asserts that no guard thread is left
