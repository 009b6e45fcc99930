"""Packaging for ipy_gpuguard. Tool configuration lives in pyproject.toml."""

import json
import shutil
import subprocess
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).parent
#: Where `jlpm build:prod` puts the lab extension (labextension/package.json's outputDir).
LAB_BUILD = HERE / "ipy_gpuguard" / "labextension"
LAB_SHARE = "share/jupyter/labextensions/ipy-gpuguard"
#: The one source of the version, for npm and Python alike (as JupyterLab's extension template
#: has it): the lab extension's package.json.
VERSION = json.loads((HERE / "labextension" / "package.json").read_text())["version"]

TEST = [
    "pytest>=8",
    "pytest-timeout>=2.3",
    "hypothesis>=6.100",
    "jupyter_client>=8",
    "nbclient>=0.10",
    "nbformat>=5.10",
    "jsonschema>=4.18",  # the protocol's JSON Schema, checked as the TypeScript side will
    "pytest-jupyter[server]>=0.10",  # a real jupyter_server for the server extension's tests
    "jupyterlab>=4.4,<5",  # the browser tests run the lab extension in a real JupyterLab
    "playwright>=1.50",  # drives Debian's Chromium (apt-get install chromium)
    "twine>=5",  # checks the sdist and the wheel as PyPI's upload does
    "jupyter_kernel_gateway>=3",  # a browser test runs JupyterLab's kernels behind a gateway
    # A CPU build of TensorFlow: real Keras training and real allocator errors without a GPU.
    'tensorflow-cpu>=2.16; platform_system == "Linux" or platform_system == "Windows"',
    'tensorflow>=2.16; platform_system == "Darwin"',
    "jax[cpu]>=0.4.30",  # Keras 3 on JAX: the search's probes on a second backend
]


def lab_data_files() -> list[tuple[str, list[str]]]:
    """The built lab extension's files, where JupyterLab finds prebuilt extensions."""
    files: dict[str, list[str]] = {}
    for path in sorted(LAB_BUILD.rglob("*")):
        if path.is_file():
            folder = Path(LAB_SHARE) / path.parent.relative_to(LAB_BUILD)
            files.setdefault(str(folder), []).append(str(path.relative_to(HERE)))
    if files:  # says which Python package installed it (`jupyter labextension list`)
        files[LAB_SHARE].append("labextension/install.json")
    return list(files.items())


class BuildWithLabExtension(build_py):
    """Builds the lab extension first when its assets are missing (a git checkout); a wheel
    built from the sdist, which carries them, needs no node."""

    def run(self) -> None:
        if not (LAB_BUILD / "package.json").exists():
            jlpm = shutil.which("jlpm")
            if jlpm is None:
                raise SystemExit(
                    "building the lab extension needs jlpm (pip install jupyter-builder) and node"
                )
            for step in (["install", "--immutable"], ["run", "build:prod"]):
                subprocess.run([jlpm, *step], cwd=HERE / "labextension", check=True)
        self.distribution.data_files = [*SERVER_CONFIG, *lab_data_files()]
        super().run()


#: Enables the server extension wherever the package is installed (not by editable installs:
#: `make` copies it into the virtual environment for the developer).
SERVER_CONFIG = [
    (
        "etc/jupyter/jupyter_server_config.d",
        ["jupyter-config/jupyter_server_config.d/ipy_gpuguard.json"],
    )
]

setup(
    name="ipy_gpuguard",
    version=VERSION,
    description="Guard TensorFlow/Keras training cells on GPUs in Jupyter: live memory, diagnosis, one-click fixes",
    long_description=(HERE / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    license="BSD-3-Clause",
    packages=find_packages(include=["ipy_gpuguard", "ipy_gpuguard.*"]),
    # The packages imported lazily read their names from __init__.pyi at run time.
    package_data={
        "": ["*.pyi"],
        "ipy_gpuguard.protocol": ["schema.json"],
        "ipy_gpuguard.diagnosis": ["xid_catalog.json"],
    },
    data_files=[*SERVER_CONFIG, *lab_data_files()],
    cmdclass={"build_py": BuildWithLabExtension},
    python_requires=">=3.10",
    install_requires=[
        # 8.23 imports typing_extensions' TypeAliasType without asking for the version that has
        # it: beside TensorFlow 2.12 and 2.13, which pin typing_extensions below 4.6, the kernel
        # does not start (ipython/ipython#14389). pip then takes 8.22, or 8.24 and later.
        "ipython>=8.12,!=8.23.*",
        "ipykernel>=6.25",
        "ipywidgets>=8.1",
        "traitlets>=5.9",
        "nvidia-ml-py>=12.535",
        "psutil>=5.9",
        "lazy_loader>=0.4",
        "jupyter_server>=2.0",
        "jsonschema>=4.18",
        "filelock>=3.20.1",  # the batch-size memory's lock, on Windows too; 3.20.1 follows no link
    ],
    entry_points={"console_scripts": ["ipy-gpuguard = ipy_gpuguard.cli:main"]},
    # No framework extra: the guard works with the TensorFlow, Keras, JAX or PyTorch already
    # installed, and an extra naming one would put a second TensorFlow beside `tensorflow-cpu`
    # or `tensorflow-directml-plugin`'s 2.10, with NumPy 2, and break it (no marker can see
    # which TensorFlow is installed).
    extras_require={
        "test": TEST,
        "dev": [*TEST, "ruff>=0.6", "mypy>=1.10", "jupyter-builder>=1.2,<2"],
    },
    classifiers=[
        "Framework :: IPython",
        "Framework :: Jupyter",
        "Framework :: Jupyter :: JupyterLab",
        "Framework :: Jupyter :: JupyterLab :: 4",
        "Framework :: Jupyter :: JupyterLab :: Extensions",
        "Framework :: Jupyter :: JupyterLab :: Extensions :: Prebuilt",
        "Programming Language :: Python :: 3",
        "Programming Language :: Python :: 3.10",
        "Programming Language :: Python :: 3.11",
        "Programming Language :: Python :: 3.12",
        "Programming Language :: Python :: 3.13",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
