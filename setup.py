"""Packaging for ipy_gpuguard. Tool configuration lives in pyproject.toml."""

from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).parent
version: dict[str, str] = {}
exec((HERE / "ipy_gpuguard" / "_version.py").read_text(), version)

TEST = [
    "pytest>=8",
    "pytest-timeout>=2.3",
    "hypothesis>=6.100",
    "jupyter_client>=8",
    "nbclient>=0.10",
    "nbformat>=5.10",
    "jsonschema>=4.18",  # the protocol's JSON Schema, checked as the TypeScript side will
    "pytest-jupyter[server]>=0.10",  # a real jupyter_server for the server extension's tests
    # A CPU build of TensorFlow: real Keras training and real allocator errors without a GPU.
    'tensorflow-cpu>=2.16; platform_system == "Linux" or platform_system == "Windows"',
    'tensorflow>=2.16; platform_system == "Darwin"',
]

setup(
    name="ipy_gpuguard",
    version=version["__version__"],
    description="Guard TensorFlow/Keras training cells on GPUs in Jupyter: live memory, diagnosis, one-click fixes",
    long_description=(HERE / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    license="BSD-3-Clause",
    packages=find_packages(include=["ipy_gpuguard", "ipy_gpuguard.*"]),
    package_data={"ipy_gpuguard.protocol": ["schema.json"]},
    # Enables the server extension wherever the package is installed (not by editable installs:
    # `make` copies it into the virtual environment for the developer).
    data_files=[
        (
            "etc/jupyter/jupyter_server_config.d",
            ["jupyter-config/jupyter_server_config.d/ipy_gpuguard.json"],
        )
    ],
    python_requires=">=3.10",
    install_requires=[
        "ipython>=8.12",
        "ipykernel>=6.25",
        "ipywidgets>=8.1",
        "traitlets>=5.9",
        "nvidia-ml-py>=12.535",
        "psutil>=5.9",
        "jupyter_server>=2.0",
    ],
    entry_points={"console_scripts": ["ipy-gpuguard = ipy_gpuguard.cli:main"]},
    extras_require={
        "tensorflow": ["tensorflow>=2.16"],
        "test": TEST,
        "dev": [*TEST, "ruff>=0.6", "mypy>=1.10", "jupyterlab>=4.2"],
    },
    classifiers=[
        "Framework :: IPython",
        "Framework :: Jupyter",
        "Framework :: Jupyter :: JupyterLab",
        "Programming Language :: Python :: 3",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
