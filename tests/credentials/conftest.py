"""Issue 41's fixtures: each real backend, and a fresh rig of loopback origins per test."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..support import BACKEND_VARIANTS, REAL_BACKENDS
from .support import Rig, backend_param, rig


@pytest.fixture(params=REAL_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """bwrap and Landlock, forced: skipped locally and FAILED in CI when unusable."""
    return backend_param(request)


@pytest.fixture(params=BACKEND_VARIANTS)
def variant(request: pytest.FixtureRequest) -> str:
    """Each backend and the Landlock launcher's plain tier (no namespaces: the
    harness's pid is in sight, and only Landlock keeps its /proc entries shut)."""
    return backend_param(request)


@pytest.fixture
def origins() -> Iterator[Rig]:
    """The origins, their CA, fresh real values, and the rig's directories, under
    /var/tmp (outside every temp root, so workspace-write grants none of it)."""
    base = Path(tempfile.mkdtemp(prefix="stockade-creds-", dir="/var/tmp"))
    try:
        with rig(base) as made:
            yield made
    finally:
        shutil.rmtree(base, ignore_errors=True)
