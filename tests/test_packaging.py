"""The wheel a user installs: built from the sdist without node, it carries the prebuilt lab
extension and the server extension's config, and Jupyter lists both as enabled; both
distributions pass ``twine check``, as PyPI's upload would."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import ipy_gpuguard._version

ROOT = Path(__file__).resolve().parents[1]


def run(*command: str, cwd: Path = ROOT, **env: str) -> str:
    done = subprocess.run(
        command, cwd=cwd, env={**os.environ, **env}, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def distributions(tmp_path_factory) -> tuple[Path, Path]:
    """The sdist, and a wheel built from it with no node on the PATH (only this Python's
    scripts)."""
    if not (ROOT / "ipy_gpuguard" / "labextension" / "package.json").exists():
        pytest.fail("build the lab extension first: make (or cd labextension && jlpm build:prod)")
    out = tmp_path_factory.mktemp("dist")
    run(
        sys.executable,
        "setup.py",
        "-q",
        "egg_info",
        "--egg-base",
        str(out),
        "sdist",
        "-d",
        str(out),
    )
    (sdist,) = out.glob("ipy_gpuguard-*.tar.gz")
    no_node = str(Path(sys.executable).parent)  # python, pip, jlpm: but no node
    run(
        sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
        "-w", str(out), str(sdist), PATH=no_node,
    )  # fmt: skip
    (built,) = out.glob("ipy_gpuguard-*.whl")
    return sdist, built


@pytest.fixture(scope="module")
def wheel(distributions) -> Path:
    return distributions[1]


def test_both_distributions_pass_twine_check(distributions):
    """What PyPI checks on upload: the metadata, and that the README renders as its page."""
    out = run(sys.executable, "-m", "twine", "check", "--strict", *map(str, distributions))
    assert out.count("PASSED") == 2, out


def test_the_wheel_carries_the_lab_extension_and_the_server_config(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    data = next(name for name in names if ".data/data/" in name).split("/data/")[0] + "/data/"
    lab = f"{data}share/jupyter/labextensions/ipy-gpuguard/"
    assert f"{lab}package.json" in names
    assert any(name.startswith(f"{lab}static/remoteEntry.") for name in names)
    assert f"{data}etc/jupyter/jupyter_server_config.d/ipy_gpuguard.json" in names
    assert "ipy_gpuguard/protocol/schema.json" in names
    assert "ipy_gpuguard/diagnosis/xid_catalog.json" in names  # the diagnosis reads it at import
    # The rooms imported lazily read their names from their stubs at run time.
    lazy = {path.parent.name for path in (ROOT / "ipy_gpuguard").glob("*/__init__.pyi")}
    assert lazy
    assert all(f"ipy_gpuguard/{room}/__init__.pyi" in names for room in lazy)


def test_the_wheel_carries_the_license_its_metadata_names(wheel):
    """BSD-3-Clause in the metadata, and its text in the wheel (issue 24)."""
    archive = zipfile.ZipFile(wheel)
    names = archive.namelist()
    licenses = [name for name in names if ".dist-info/" in name and "LICENSE" in name]
    assert licenses
    assert "BSD 3-Clause License" in archive.read(licenses[0]).decode()
    (metadata,) = [name for name in names if name.endswith(".dist-info/METADATA")]
    text = archive.read(metadata).decode()
    assert "Programming Language :: Python :: 3.10" in text
    assert "Framework :: Jupyter :: JupyterLab :: Extensions :: Prebuilt" in text


def test_python_and_the_lab_extension_have_one_version(wheel):
    """Issue 24 item 10: the version was kept by hand in _version.py and package.json."""
    archive = zipfile.ZipFile(wheel)
    (metadata,) = [name for name in archive.namelist() if name.endswith(".dist-info/METADATA")]
    version = re.search(r"^Version: (\S+)$", archive.read(metadata).decode(), re.MULTILINE)
    (lab,) = [name for name in archive.namelist() if name.endswith("ipy-gpuguard/package.json")]
    assert version is not None
    assert json.loads(archive.read(lab))["version"] == version.group(1)
    assert ipy_gpuguard._version.__version__ == version.group(1)


def test_jupyter_lists_both_extensions_enabled_once_installed(wheel, tmp_path):
    # What an installer does with the wheel's data files: into the environment's prefix. (Not
    # pip install --prefix: it would uninstall this environment's own ipy_gpuguard first.)
    prefix = tmp_path / "prefix"
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            _, data, inside = name.partition(".data/data/")
            if data:
                target = prefix / inside
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.read(name))
    env = {
        "JUPYTER_PATH": str(prefix / "share" / "jupyter"),
        # `server extension list` shows the user, sys-prefix and system dirs: the prefix as user.
        "JUPYTER_CONFIG_DIR": str(prefix / "etc" / "jupyter"),
    }
    jupyter = str(Path(sys.executable).parent / "jupyter")
    labextensions = run(jupyter, "labextension", "list", **env)
    section = labextensions.split(str(prefix / "share" / "jupyter" / "labextensions"))[1]
    assert "ipy-gpuguard v0.1.0 enabled OK (python, ipy_gpuguard)" in _plain(section)
    servers = run(jupyter, "server", "extension", "list", **env)
    section = servers.split(str(prefix / "etc" / "jupyter"))[1]
    assert "ipy_gpuguard enabled" in _plain(section)


def _plain(text: str) -> str:
    """Without the terminal's colour codes."""
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text)
