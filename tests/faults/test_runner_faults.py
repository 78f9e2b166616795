"""A runner that cannot start: SANDBOX_UNAVAILABLE, nothing run, foreground and background.

The executor-level cases (missing, not executable, missing interpreter, deleted
before a queued spawn) live in tests/executor; here the same faults are seen the way
an agent sees them, through `AgentSession.run_tool`, and the runner is deleted between
a REAL functional probe and the spawn.

How the real probe is pointed at a runner we can delete: bwrap is never looked up on
PATH, but an operator may name one explicitly (`bwrap_path` in the
`stockade.sandbox.local` entry, `ProviderConfig.bwrap_path`). A symlink named `bwrap`
to the system's bwrap, in a directory outside every host temp root (the trust base
refuses a runner under /tmp or $TMPDIR), is named that way. The unmodified default
selector then runs bwrap's functional probe through the link and selects the link's
path as the runner; deleting the link afterwards is exactly "the runner vanished
after the probe". A symlink (not a copy) keeps a setuid bwrap working for a non-root
CI user.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import trio

from stockade import open_harness
from stockade.errors import SandboxUnavailable
from stockade.executor.actor import open_executor
from stockade.executor.config import ExecutorConfig
from stockade.sandbox.actor import open_provider
from stockade.sandbox.backends import bwrap
from stockade.sandbox.config import ProviderConfig
from stockade.testing import PASS_THROUGH
from stockade.vocab import ExecutionPolicy, SandboxMode

from ..support import require_backend
from ._support import composition

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
    state_dir, project, runner_dir, kind
):
    runner = make_runner(runner_dir / "runner", kind)
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
def deletable_bwrap(base) -> Path:
    """A deletable `bwrap` outside the temp roots: a symlink to the real one, to be
    named by `bwrap_path` (PATH is never searched)."""
    require_backend("bwrap")
    real = bwrap.locate_bwrap()
    assert real is not None
    bindir = base / "bin"
    bindir.mkdir()
    link = bindir / "bwrap"
    link.symlink_to(os.path.realpath(real))
    assert bwrap.locate_bwrap(str(link)) == str(link), bwrap.bwrap_not_found(str(link))
    return link


async def test_runner_deleted_between_a_real_probe_and_the_spawn(
    state_dir, project, deletable_bwrap
):
    marker = project / "ran"
    entries = composition(
        state_dir, sandbox={"backend": "bwrap", "bwrap_path": str(deletable_bwrap)}
    )
    async with open_harness(entries) as harness:
        session = await harness.open_session(cwd=project)
        before = await session.run_tool("bash", {"command": "echo probed"})
        report = await harness.provider.describe()
        # The real functional probe ran, through our link, and selected it.
        assert report.selected == "bwrap"
        (candidate,) = report.candidates
        assert candidate.probed and candidate.runner == str(deletable_bwrap)
        assert before.text.startswith("probed") and before.facts["backend"] == "bwrap"

        deletable_bwrap.unlink()
        for background in (False, True):
            result = await session.run_tool(
                "bash", {"command": f"touch {marker}", "background": background}
            )
            assert_unavailable(result, marker)
            assert str(deletable_bwrap) in result.text
        # danger-full-access never touches the runner, so it still works.
        await session.set_sandbox_mode("danger-full-access")
        free = await session.run_tool("bash", {"command": "echo free"})
        assert free.text.startswith("free") and free.facts["backend"] == "none"
    assert not marker.exists()


async def test_a_queued_job_whose_probed_runner_vanished_is_stamped_runner_failed(
    project, deletable_bwrap
):
    marker = project / "ran"
    policy = ExecutionPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace_root=str(project))
    config = ExecutorConfig(max_running=1, kill_grace=0.2)
    async with (
        open_provider(ProviderConfig(backend="bwrap", bwrap_path=str(deletable_bwrap))) as provider,
        open_executor(config, provider) as executor,
    ):
        first = await executor.start(executor.resolve("sleep 0.5", policy=policy))
        queued = await executor.start(executor.resolve(f"touch {marker}", policy=policy))
        assert (await executor.job_output(queued.id)).state == "queued"
        deletable_bwrap.unlink()
        with trio.fail_after(10):
            assert (await executor.wait(first.id)).state == "exited"
            report = await executor.wait(queued.id)
        # A later call is refused before it starts: the provider sees the runner it
        # probed is gone (its pinned identity no longer matches), or the spawn fails.
        with pytest.raises(SandboxUnavailable) as later:
            await executor.run(executor.resolve(f"touch {marker}", policy=policy))
        assert str(deletable_bwrap) in later.value.detail
        assert re.search(
            "cannot start the sandbox runner|changed on disk since it was probed",
            later.value.detail,
        ), later.value.detail
    assert report.state == "runner-failed" and report.runner_failed and not report.denied
    assert str(deletable_bwrap) in (report.runner_failure or "")
    assert not marker.exists()
