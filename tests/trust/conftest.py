"""Fixtures for the trust-base battery: scratch areas outside every temp root, and
each real backend (skipped locally, FAILED in CI, when it is unusable)."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..support import REAL_BACKENDS, require_backend
from ._support import PLANTED, PYVENV, REPO, Area, installation_in_repo, new_area


@pytest.fixture
def area() -> Iterator[Area]:
    made = new_area()
    try:
        yield made
    finally:
        shutil.rmtree(made.base, ignore_errors=True)


@pytest.fixture
def state_dir() -> Iterator[str]:
    """Session logs outside every writable root, as the harness requires."""
    path = tempfile.mkdtemp(prefix="stockade-state-", dir="/var/tmp")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(params=REAL_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    require_backend(request.param)
    return request.param


@pytest.fixture
def repo_root() -> Iterator[Path]:
    """The checkout itself as the workspace root (it holds src/stockade, the editable
    install's package directory, and .venv); whatever a call could leave is undone."""
    if not installation_in_repo():
        pytest.fail(f"stockade is not installed inside {REPO}: this route needs it there")
    venv_before = PYVENV.read_bytes() if PYVENV.exists() else None
    missing = [p for p in (REPO / "stockade.yml", REPO / ".git" / "hooks") if not p.exists()]
    try:
        yield REPO
    finally:
        with contextlib.suppress(FileNotFoundError):
            PLANTED.unlink()
        if venv_before is not None and PYVENV.read_bytes() != venv_before:
            PYVENV.write_bytes(venv_before)
        for path in missing:  # an empty placeholder a blocker left behind
            with contextlib.suppress(OSError):
                if path.is_dir() and not os.listdir(path):
                    path.rmdir()
                elif path.is_file() and path.stat().st_size == 0:
                    path.unlink()
