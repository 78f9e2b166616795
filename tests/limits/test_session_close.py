"""A closed session's jobs are killed, their cause session-closed, and the session's
cgroup is removed with them (issue 26); another session's jobs run on."""

from __future__ import annotations

import glob
import os

import pytest
import trio

from stockade.executor.actor import open_executor
from stockade.executor.config import ExecutorConfig
from stockade.limits import SessionLimits
from stockade.sandbox.actor import open_provider
from stockade.vocab import ExecutionPolicy, SandboxMode

from ..support import pids_named, require_backend


def _session_groups(name: str) -> list[str]:
    return glob.glob(f"/sys/fs/cgroup/pids/stockade-p*-{os.getpid()}-*/s-{name}")


@pytest.mark.parametrize("backend", ["landlock", "bwrap"])
async def test_closing_a_session_ends_its_jobs_and_its_cgroup(tmp_path, backend):
    marker = f"stockade-session-close-{os.getpid()}-{backend}"
    policy = ExecutionPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace_root=str(tmp_path))
    config = ExecutorConfig(session_limits=SessionLimits(running_jobs=1, memory=None))
    async with (
        open_provider(require_backend(backend)) as provider,
        open_executor(config, provider) as executor,
    ):

        def job(owner):
            return executor.resolve(f"exec -a {marker} sleep 30", policy=policy, owner=owner)

        running = await executor.start(job("s1"))
        queued = await executor.start(job("s1"))
        other = await executor.start(job("s2"))
        reports = {}

        async def wait(handle, owner):
            reports[handle.id] = await executor.wait(handle.id, owner=owner, read=False)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait, running, "s1")
            nursery.start_soon(wait, queued, "s1")
            with trio.fail_after(10):
                while len(pids_named(marker)) < 2:
                    await trio.sleep(0.02)
            assert _session_groups("s1") and _session_groups("s2")
            with trio.fail_after(20):
                assert await executor.close_session("s1") == 2
        assert reports[running.id].cause == "session-closed", reports[running.id]
        assert reports[queued.id].cause == "session-closed"
        assert reports[queued.id].exit_code is None  # it never started
        assert _session_groups("s1") == []
        # s2's job runs on, in its own session's group.
        assert (await executor.job_output(other.id, owner="s2")).state == "running"
        assert len(pids_named(marker)) == 1
        await executor.close_session("s2")
    assert pids_named(marker) == []
    assert glob.glob(f"/sys/fs/cgroup/pids/stockade-p*-{os.getpid()}-*") == []
