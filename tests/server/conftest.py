"""A real jupyter_server for these tests only (pytest-jupyter's fixtures, this folder only:
its autouse event loop must not reach the kernel and Keras tests)."""

from __future__ import annotations

import pytest
from pytest_jupyter.jupyter_core import *  # noqa: F403  # fixtures and the async test runner
from pytest_jupyter.jupyter_server import *  # noqa: F403


@pytest.fixture
def jp_server_config():
    return {"ServerApp": {"jpserver_extensions": {"ipy_gpuguard": True}}}
