"""A session's cap on running background jobs (issue 26): jobs beyond it wait, in the
order they were started, say where they stand, can be killed before they start, and
never hold back another session's jobs."""

from __future__ import annotations

import pytest
import trio

from stockade.executor import render_job
from stockade.executor.config import ExecutorConfig
from stockade.limits import SessionLimits
from stockade.vocab import ExecutionPolicy, SandboxMode

from ..support import executor_on


@pytest.mark.parametrize("backend", [None, "landlock", "bwrap"])
async def test_three_run_five_wait_in_order_and_a_queued_job_is_killed(tmp_path, backend):
    order = tmp_path / "order"
    config = ExecutorConfig(session_limits=SessionLimits(running_jobs=3, memory=None))
    mode = SandboxMode.DANGER_FULL_ACCESS if backend is None else SandboxMode.WORKSPACE_WRITE
    policy = ExecutionPolicy(mode=mode, workspace_root=str(tmp_path))
    # Each job writes its number when it starts, then waits for its own gate.
    command = "echo {n} >> order; while [ ! -e gate{n} ]; do sleep 0.02; done"

    async def scenario(executor):
        def job(n, owner="s1"):
            return executor.resolve(command.format(n=n), policy=policy, owner=owner)

        handles = [await executor.start(job(n)) for n in range(1, 9)]
        reports = [await executor.job_output(h.id, owner="s1") for h in handles]
        assert [r.state for r in reports] == ["running"] * 3 + ["queued"] * 5
        assert [r.queue_position for r in reports[3:]] == [0, 1, 2, 3, 4]
        assert "queued, 2 of its session's jobs ahead" in render_job(reports[5])
        # Another session is not held back by s1's cap.
        other = await executor.start(job(99, owner="s2"))
        assert (await executor.job_output(other.id, owner="s2")).state == "running"
        # Killed while queued: it never starts, and the others move up.
        killed = await executor.kill(handles[4].id, owner="s1")
        assert killed.state == "killed" and killed.exit_code is None
        assert (await executor.job_output(handles[5].id, owner="s1")).queue_position == 1

        async def started(n):
            with trio.fail_after(20):
                while not order.exists() or str(n) not in order.read_text().split():
                    await trio.sleep(0.02)

        for n in (1, 2, 3, 99):
            await started(n)
        # One slot at a time: each job that ends lets the next queued one start.
        for ending, starting in ((1, 4), (2, 6), (3, 7), (4, 8)):
            (tmp_path / f"gate{ending}").touch()
            await started(starting)
        for n in (6, 7, 8, 99):
            (tmp_path / f"gate{n}").touch()
        for handle in handles[:4] + handles[5:] + [other]:
            owner = "s2" if handle is other else "s1"
            with trio.fail_after(30):
                report = await executor.wait(handle.id, owner=owner)
            assert report.exit_code == 0, report

    async with executor_on(backend, config) as executor:
        await scenario(executor)
    begun = order.read_text().split()
    s1 = [n for n in begun if n != "99"]
    # Three at a time (the first three together), the rest in the order begun.
    assert sorted(s1[:3]) == ["1", "2", "3"], begun
    assert s1[3:] == ["4", "6", "7", "8"], begun
    assert "5" not in begun and "99" in begun
