"""Fixtures for the hostile-input tests.

Projects and state directories are siblings in one scratch directory outside every
host temp root (see tests/conftest.py `scratch`): workspace-write does not grant
them, and the session log never lies inside a root a command may write.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ..faults._support import outside_temp_roots


@pytest.fixture
def base() -> Iterator[Path]:
    with outside_temp_roots() as path:
        yield path


@pytest.fixture
def state_dir(base: Path) -> Path:
    path = base / "state"
    path.mkdir()
    return path


@pytest.fixture
def project(base: Path) -> Path:
    path = base / "project"
    path.mkdir()
    return path
