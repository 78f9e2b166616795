"""Shared fixtures: real-backend selection that fails (never skips) in CI when missing."""

from __future__ import annotations

import os

import pytest

from stockade.sandbox._select import select_backend
from stockade.sandbox.config import ProviderConfig

IN_CI = os.environ.get("CI") == "true"
REAL_BACKENDS = ("bwrap", "landlock")


def require_backend(name: str) -> ProviderConfig:
    """A config forcing backend `name`; skip locally, FAIL in CI, when it is unusable."""
    config = ProviderConfig(backend=name)
    selection = select_backend(config)
    if selection.backend is None:
        message = f"backend {name} unusable here: {selection.detail}"
        if IN_CI:
            pytest.fail(f"CI=true and a real backend is missing: {message}")
        pytest.skip(message)
    return config


@pytest.fixture(params=REAL_BACKENDS)
def backend_config(request: pytest.FixtureRequest) -> ProviderConfig:
    return require_backend(request.param)


@pytest.fixture
def scratch():
    """A directory OUTSIDE every host temp root, so workspace-write does not grant it."""
    import shutil
    import tempfile

    from stockade.sandbox._select import host_paths

    base = tempfile.mkdtemp(prefix="stockade-test-", dir="/var/tmp")
    for temp_root in host_paths().temp_roots:
        if os.path.realpath(base).startswith(temp_root.rstrip("/") + "/"):
            pytest.fail(f"{base} lies under the temp root {temp_root}; unset TMPDIR=/var/tmp")
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)
