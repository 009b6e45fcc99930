"""The project's wheel, built once for every stack of a run."""

from __future__ import annotations

from pathlib import Path

import pytest

from .venvs import wheel


@pytest.fixture(scope="session")
def project() -> Path:
    return wheel()
