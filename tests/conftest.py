"""Shared fixtures: real backends (never skipped in CI) and scratch directories."""

from __future__ import annotations

import os

import pytest

from stockade.sandbox.config import ProviderConfig

from .support import REAL_BACKENDS, require_backend


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """In CI no test may skip: a skip there means a backend or a capability the
    suite needs is missing, and that must fail the run, not pass it quietly.
    (Locally, skips with their reasons are fine; strict xfails are not skips.)"""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") == "true" and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"CI=true and this test skipped ({reason}): in CI every test must run"


def pytest_configure(config: pytest.Config) -> None:
    # Every probe in the suite is real or stubbed on purpose: a verdict remembered by
    # an earlier `stockade exec` must never stand in for a stub (tests/unit/
    # test_probe_cache.py turns the cache back on for itself).
    os.environ["STOCKADE_NO_PROBE_CACHE"] = "1"


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


@pytest.fixture
def runner_dir():
    """A directory for fake runners: outside every temp root AND every workspace root
    (a runner inside a root is refused: a confined call could replace it)."""
    import shutil
    import tempfile
    from pathlib import Path

    path = tempfile.mkdtemp(prefix="stockade-runners-", dir="/var/tmp")
    try:
        yield Path(path)
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def state_dir_outside():
    """A session-log directory outside every writable root, as the harness requires."""
    import shutil
    import tempfile

    path = tempfile.mkdtemp(prefix="stockade-state-", dir="/var/tmp")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
