"""Fixtures for `stockade mcp`: session logs and workspace roots outside /tmp."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest


@pytest.fixture
def state_dir():
    """Session logs outside every workspace root and temp root (the harness refuses
    a log a confined command could rewrite)."""
    path = tempfile.mkdtemp(prefix="stockade-mcp-state-", dir="/var/tmp")
    try:
        yield Path(path)
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def root(scratch) -> Path:
    """A workspace root outside the temp roots (workspace-write would grant /tmp)."""
    path = Path(scratch) / "root"
    path.mkdir()
    return path


@pytest.fixture
def outside(scratch) -> Path:
    """A directory outside the root and the temp roots: writes there are denied."""
    path = Path(scratch) / "outside"
    path.mkdir()
    return path
