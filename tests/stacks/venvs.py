"""The stacks our users train on, each in a virtual environment of its own under build/stacks.

Each stack installs the project's wheel (as a user does, with pip's own resolver) beside the
framework it names, on the Python it names: the pyenv Pythons of this machine. A venv is kept
between runs while its definition and the wheel are unchanged (its ``.built`` file holds both),
so a second run reuses it.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build" / "stacks"


@dataclass(frozen=True)
class Stack:
    """A framework stack: what pip installs beside the wheel, on which Python, and how the
    person's cells import Keras there (``tensorflow.keras`` for Keras 2, ``keras`` for 3)."""

    name: str
    python: str
    requirements: tuple[str, ...]
    keras: str
    environment: dict[str, str] = field(default_factory=dict)
    installed: str = ""  # what the doctor's list of installed frameworks shows of it

    @property
    def folder(self) -> Path:
        return BUILD / self.name

    @property
    def interpreter(self) -> Path:
        return self.folder / "bin" / "python"


STACKS = (
    # The last native-Windows GPU TensorFlow, and the base of tensorflow-directml-plugin.
    Stack(
        "tf2.10-keras2",
        "3.10",
        ("tensorflow-cpu==2.10.1", "numpy<2"),
        "tensorflow.keras",
        installed="tensorflow-cpu 2.10.1, keras 2.10.0",
    ),
    Stack(
        "tf2.15-keras2",
        "3.11",
        ("tensorflow-cpu==2.15.1",),
        "tensorflow.keras",
        installed="tensorflow-cpu 2.15.1, keras 2.15.0",
    ),
    Stack(
        "tf-newest-tf_keras",
        "3.11",
        ("tensorflow-cpu", "tf_keras"),
        "tensorflow.keras",
        {"TF_USE_LEGACY_KERAS": "1"},
        installed="tf-keras",
    ),
    Stack(
        "keras3-jax",
        "3.11",
        ("keras>=3", "jax[cpu]"),
        "keras",
        {"KERAS_BACKEND": "jax"},
        installed="jax",
    ),
)


#: What the unit suites need besides the project: no framework (the tests that train with
#: TensorFlow are marked ``tensorflow`` and run on the main Python).
UNIT_REQUIREMENTS = (
    "numpy",
    "pytest>=8",
    "pytest-timeout>=2.3",
    "hypothesis>=6.100",
    "jupyter_client>=8",
    "nbformat>=5.10",
    "pytest-jupyter[server]>=0.10",
)
#: The other Pythons the project supports (the whole suite runs on 3.11).
PYTHONS = tuple(
    Stack(f"python{version}", version, UNIT_REQUIREMENTS, "")
    for version in ("3.10", "3.12", "3.13")
)

#: The oldest JupyterLab the lab extension asks for (``^4.0.0`` in its package.json).
OLDEST_LAB = Stack("jupyterlab-4.0.0", "3.11", ("jupyterlab==4.0.0",), "")


def find_python(version: str) -> Path:
    """The machine's Python ``version`` (``3.10``): on PATH, or pyenv's."""
    found = shutil.which(f"python{version}")
    if found and subprocess.run([found, "-V"], capture_output=True).returncode == 0:
        return Path(found)
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates = sorted(glob.glob(str(pyenv / "versions" / f"{version}.*" / "bin" / "python")))
    if not candidates:
        pytest.fail(f"the stack tests need Python {version} (pyenv install {version})")
    return Path(candidates[-1])


def wheel() -> Path:
    """The project's wheel, built once per run from this tree."""
    folder = BUILD / "wheel"
    shutil.rmtree(folder, ignore_errors=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "-w",
            str(folder),
            str(ROOT),
        ],
        check=True,
    )
    (built,) = folder.glob("ipy_gpuguard-*.whl")
    return built


def venv(stack: Stack, project: Path) -> Path:
    """The stack's venv: its framework first, as the person has it, then the project from
    ``project`` (a wheel), as the person adds it. What pip would install for the project is
    kept in ``dry-run.json`` (``pip install --dry-run --report``). Made afresh when the stack's
    definition or the wheel changed."""
    digest = hashlib.sha256(project.read_bytes()).hexdigest()
    stamp = json.dumps({"stack": repr(stack), "wheel": digest})
    marker = stack.folder / ".built"
    if marker.exists() and marker.read_text() == stamp:
        return stack.interpreter
    shutil.rmtree(stack.folder, ignore_errors=True)
    subprocess.run([find_python(stack.python), "-m", "venv", stack.folder], check=True)
    pip(stack, "install", "--upgrade", "pip")
    pip(stack, "install", *stack.requirements)
    # With the extra the README once offered: pip ignores an extra the project no longer has.
    report = stack.folder / "dry-run.json"
    wanted = f"{project}[tensorflow]"
    pip(stack, "install", "--dry-run", "--quiet", "--report", str(report), wanted)
    pip(stack, "install", str(project))
    marker.write_text(stamp)
    return stack.interpreter


def would_install(stack: Stack) -> dict[str, str]:
    """What ``pip install '<wheel>[tensorflow]'`` into the stack as it was would have
    installed: name to version, from pip's installation report."""
    report = json.loads((stack.folder / "dry-run.json").read_text())
    return {
        item["metadata"]["name"].lower(): item["metadata"]["version"] for item in report["install"]
    }


def pip(stack: Stack, *arguments: str) -> str:
    done = subprocess.run(
        [stack.interpreter, "-m", "pip", "--disable-pip-version-check", *arguments],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.fail(f"pip {' '.join(arguments)} failed in {stack.name}:\n{done.stderr[-3000:]}")
    return done.stdout
