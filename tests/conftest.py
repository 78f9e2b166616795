"""Shared fixtures: real backends (never skipped in CI) and scratch directories."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from stockade.sandbox import _argv, _probe
from stockade.sandbox.config import ProviderConfig

from .support import IS_ROOT, REAL_BACKENDS, NobodyView, nobody_view, require_backend


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
    # an earlier `stockade exec` must never stand in for a stub (tests/sandbox/
    # test_probe_cache.py turns the cache back on for itself).
    os.environ["STOCKADE_NO_PROBE_CACHE"] = "1"


@pytest.fixture(scope="session")
def nobody_public() -> Iterator[NobodyView]:
    """Where uid 65534 reads this checkout and its venv (a mirror, when it cannot reach
    them: a clone in a mode-700 home), for the whole session."""
    with nobody_view() as view:
        yield view


@pytest.fixture(autouse=True)
def _nobody_reads_public_copies(request: pytest.FixtureRequest) -> None:
    """A `nobody` test's in-process provider names the package files its argv makes
    uid 65534 read (bwrap's filter-stage launcher, the empty file hiding sockets and
    blocking protected paths) by their public copies. Autouse, so it is in place
    before any fixture opens a provider; nothing changes when nobody reaches the
    originals."""
    if not IS_ROOT or request.node.get_closest_marker("nobody") is None:
        return
    view: NobodyView = request.getfixturevalue("nobody_public")
    if view.base is None:
        return
    monkeypatch: pytest.MonkeyPatch = request.getfixturevalue("monkeypatch")
    monkeypatch.setattr(_argv, "EMPTY_FILE", view.path(_argv.EMPTY_FILE))
    # The placeholders that hold text (a commondir of ".", an empty MCP config).
    monkeypatch.setattr(_argv, "DATA_DIR", view.path(_argv.DATA_DIR))
    launcher = view.path(_probe.launcher_path())
    monkeypatch.setattr(_probe, "launcher_path", lambda: launcher)


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
