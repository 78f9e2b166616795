"""A probe that never finishes: it is cut at `ProviderConfig.probe_timeout` and fails closed.

The two Linux candidates are located differently, so each gets its own fake:
- bwrap is never looked up on PATH: a fake `bwrap` script that sleeps is named by
  `ProviderConfig.bwrap_path`, and lives outside every host temp root (the trust base
  refuses a runner under /tmp or $TMPDIR);
- the Landlock launcher is the package's own binary, found by `launcher_path()`; the
  probe module's lookup is pointed at a fake launcher that sleeps.
Both run through the unmodified default selector (the real `_run` with its timeout).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import trio

from stockade.errors import SandboxUnavailable
from stockade.sandbox import _probe
from stockade.sandbox.actor import open_provider
from stockade.sandbox.backends import bwrap
from stockade.sandbox.config import ProviderConfig
from stockade.trust import host_temp_roots
from stockade.vocab import SandboxMode, SandboxPolicy

from ..support import require_backend
from ._support import kill_leftovers, marker, pids_with_marker

TIMEOUT = 0.5


def hanging(path: Path, name: str, *, forks: bool) -> Path:
    """A runner that never exits; `forks`: the sleep is a child, not the runner itself."""
    body = f"(exec -a {name} sleep 1000)" if forks else f"exec -a {name} sleep 1000"
    path.write_text(f"#!/bin/bash\n{body}\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def fake_bwrap(scratch):
    """install() -> (marker, path): a hanging bwrap outside the temp roots, to be
    passed as `bwrap_path` (PATH is never searched)."""

    def install(*, forks: bool = False) -> tuple[str, str]:
        bindir = Path(scratch) / "bin"
        bindir.mkdir(exist_ok=True)
        name = marker()
        path = hanging(bindir / "bwrap", name, forks=forks)
        assert bwrap.runner_problem(str(path), host_temp_roots()) is None
        return name, str(path)

    return install


@pytest.fixture
def fake_launcher(tmp_path, monkeypatch):
    def install(*, forks: bool = False) -> str:
        name = marker()
        launcher = hanging(tmp_path / "landlock-run", name, forks=forks)
        monkeypatch.setattr(_probe, "launcher_path", lambda: str(launcher))
        return name

    return install


async def confine(config: ProviderConfig, root: Path):
    policy = SandboxPolicy(mode=SandboxMode.READ_ONLY, workspace_root=str(root))
    async with open_provider(config) as provider:
        started = time.monotonic()
        try:
            with trio.fail_after(TIMEOUT * 10 + 5):
                return await provider.confine(["true"], policy), time.monotonic() - started
        except SandboxUnavailable as error:
            return error, time.monotonic() - started


@pytest.mark.parametrize("candidate", ["bwrap", "landlock"])
async def test_a_hanging_probe_fails_closed_with_a_clear_detail(
    tmp_path, fake_bwrap, fake_launcher, candidate
):
    if candidate == "bwrap":
        name, bwrap = fake_bwrap()
    else:
        name, bwrap = fake_launcher(), None
    outcome, took = await confine(
        ProviderConfig(backend=candidate, probe_timeout=TIMEOUT, bwrap_path=bwrap), tmp_path
    )
    try:
        assert isinstance(outcome, SandboxUnavailable), outcome
        assert outcome.code == "SANDBOX_UNAVAILABLE"
        assert f"{candidate}: probe timed out after {TIMEOUT:g}s" in outcome.detail
        assert TIMEOUT <= took < TIMEOUT + 3
    finally:
        kill_leftovers(pids_with_marker(name))


async def test_a_hanging_bwrap_gives_way_to_the_launcher_in_the_auto_chain(tmp_path, fake_bwrap):
    require_backend("landlock")
    name, bwrap = fake_bwrap()
    outcome, took = await confine(ProviderConfig(probe_timeout=TIMEOUT, bwrap_path=bwrap), tmp_path)
    try:
        assert not isinstance(outcome, SandboxUnavailable), outcome
        assert outcome.backend == "landlock"
        assert TIMEOUT <= took < TIMEOUT + 3
    finally:
        kill_leftovers(pids_with_marker(name))


async def test_both_probes_hanging_fail_closed_naming_both(tmp_path, fake_bwrap, fake_launcher):
    name, bwrap = fake_bwrap()
    names = [name, fake_launcher()]
    outcome, took = await confine(ProviderConfig(probe_timeout=TIMEOUT, bwrap_path=bwrap), tmp_path)
    try:
        assert isinstance(outcome, SandboxUnavailable)
        assert f"bwrap: probe timed out after {TIMEOUT:g}s" in outcome.detail
        assert f"landlock: probe timed out after {TIMEOUT:g}s" in outcome.detail
        assert 2 * TIMEOUT <= took < 2 * TIMEOUT + 3
    finally:
        for name in names:
            kill_leftovers(pids_with_marker(name))


@pytest.mark.parametrize("candidate", ["bwrap", "landlock"])
async def test_a_timed_out_probe_leaves_no_process_behind(
    tmp_path, fake_bwrap, fake_launcher, candidate
):
    if candidate == "bwrap":
        name, bwrap = fake_bwrap(forks=True)
    else:
        name, bwrap = fake_launcher(forks=True), None
    outcome, _took = await confine(
        ProviderConfig(backend=candidate, probe_timeout=TIMEOUT, bwrap_path=bwrap), tmp_path
    )
    assert isinstance(outcome, SandboxUnavailable)
    await trio.sleep(0.2)
    leftover = pids_with_marker(name)
    kill_leftovers(leftover)
    assert leftover == [], f"the {candidate} probe left {leftover} running"
