"""Everything the doctor reads from the machine, in one place so that tests can replace it.

Each field is an input a probe reads (NVML, the environment, the platform, the library
loader, package metadata, a framework in a child process); :meth:`Machine.this_one` is the
real machine. Nothing here changes the system: it reads, loads libraries to ask their version,
and imports frameworks only in child processes.
"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import stat
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from types import ModuleType
from typing import Any

from ..telemetry.nvml import import_pynvml, listed_pid
from ..watchdog.gpu_timeout import read_tdr_registry
from .frameworks import FrameworkView, read_in_child
from .libraries import pip_library_directories


@dataclass(frozen=True)
class Machine:
    """The inputs of every probe.

    Parameters
    ----------
    platform
        ``sys.platform``: ``linux``, ``win32``, ``darwin``.
    description
        The Python and operating system, in words.
    version_of
        The installed version of a distribution (``tensorflow-cpu``), ``None`` if absent.
    open_nvml
        Returns the ``pynvml`` module; raises ``TelemetryUnavailable`` when it is missing.
    load_library
        Loads a shared library by name or path (``ctypes.CDLL``); raises ``OSError``.
    library_directories
        Where pip's CUDA packages put their libraries, searched before the system's loader.
    read_framework
        What a framework (``tensorflow``, ``torch``, ``jax``) sees, imported in a child process.
    modules
        This process's imported modules: the memory settings of a TensorFlow already running
        here are read from it, never by importing.
    read_registry
        Windows' ``TdrDelay`` and ``TdrLevel`` where set.
    process_name
        The name of a process by pid, ``None`` when it cannot be told.
    pid
        This process's PID as NVML lists it; ``None`` in a container, where NVML lists the
        host's PIDs and none can be told from this process (:func:`listed_pid`).
    read_kernel_log
        This boot's kernel log (Linux), ``None`` when this user may not read it.
    keras_config
        Keras' ``keras.json`` (:func:`read_keras_config`): the backend it names is the one
        Keras trains on, unless ``KERAS_BACKEND`` says another.
    """

    environ: Mapping[str, str]
    platform: str
    description: str
    version_of: Callable[[str], str | None]
    open_nvml: Callable[[], ModuleType]
    load_library: Callable[[str], Any]
    library_directories: tuple[str, ...]
    read_framework: Callable[[str], FrameworkView]
    modules: Mapping[str, ModuleType] = field(default_factory=dict)
    read_registry: Callable[[], Mapping[str, int]] = dict
    process_name: Callable[[int], str | None] = lambda pid: None
    pid: int | None = 0
    read_kernel_log: Callable[[], str | None] = lambda: None
    keras_config: Mapping[str, Any] = field(default_factory=dict)

    @property
    def configured_keras_backend(self) -> str | None:
        """The backend ``keras.json`` names, if any."""
        backend = self.keras_config.get("backend")
        return backend if isinstance(backend, str) and backend else None

    @classmethod
    def this_one(cls) -> Machine:
        """The machine this process runs on."""
        environ = dict(os.environ)
        return cls(
            environ=environ,
            platform=sys.platform,
            description=(
                f"Python {platform.python_version()} ({platform.python_implementation()}) "
                f"on {platform.platform()}"
            ),
            version_of=installed_version,
            open_nvml=import_pynvml,
            load_library=ctypes.CDLL,
            library_directories=pip_library_directories(sys.platform),
            read_framework=lambda framework: read_in_child(framework, environ),
            modules=sys.modules,
            read_registry=read_tdr_registry if sys.platform == "win32" else dict,
            process_name=process_name,
            pid=listed_pid(),
            read_kernel_log=read_kernel_log if sys.platform == "linux" else lambda: None,
            keras_config=read_keras_config(environ),
        )


#: The most of ``keras.json`` read: Keras writes a few lines; a larger file is none of its.
KERAS_CONFIG_MOST_BYTES = 1 << 16


def read_keras_config(environ: Mapping[str, str]) -> dict[str, Any]:
    """Keras' ``keras.json`` where Keras itself looks for it: in ``$KERAS_HOME``, else in
    ``.keras`` in the home folder (in ``/tmp`` where the home folder cannot be written). Empty
    where there is none, or where it is no small file holding a JSON object (a pipe or a device
    there is never waited on); never written (Keras writes it)."""
    folder = environ.get("KERAS_HOME")
    if folder is None:
        home = os.path.expanduser("~")
        folder = os.path.join(home if os.access(home, os.W_OK) else "/tmp", ".keras")
    path = os.path.expanduser(os.path.join(folder, "keras.json"))
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return {}
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return {}
        text = os.read(descriptor, KERAS_CONFIG_MOST_BYTES + 1)
    except OSError:
        return {}
    finally:
        os.close(descriptor)
    try:
        config = json.loads(text) if len(text) <= KERAS_CONFIG_MOST_BYTES else None
    except (ValueError, RecursionError):  # no JSON, or nested too deep to read
        return {}
    return config if isinstance(config, dict) else {}


def installed_version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


#: The commands that print this boot's kernel log, the first that may run wins; each is
#: refused, not prompted, where the log is restricted (``kernel.dmesg_restrict``).
KERNEL_LOG_COMMANDS = (("dmesg",), ("journalctl", "-k", "-b", "--no-pager", "-q"))
KERNEL_LOG_TIMEOUT_S = 10


def read_kernel_log() -> str | None:
    """This boot's kernel log from the first command allowed to print it, else ``None``."""
    for command in KERNEL_LOG_COMMANDS:
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=KERNEL_LOG_TIMEOUT_S, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0 and done.stdout:
            return done.stdout
    return None


def process_name(pid: int) -> str | None:
    import psutil

    try:
        name: str = psutil.Process(pid).name()
    except (psutil.Error, OSError):
        return None  # gone, another user's, or in another container's pid namespace
    return name
