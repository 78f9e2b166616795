"""Background jobs in a long-lived harness: a finished job is forgotten once its final
output is read, and at most the last 100 unread finished jobs are kept per session."""

from __future__ import annotations

import pytest
import trio

from stockade import open_harness
from stockade.errors import UnknownJob
from stockade.executor._jobs import FINISHED_JOBS_KEPT

# The local executor and an in-memory log: this is about the job table, not the sandbox.
LOCAL = [{"id": "bash", "name": "stockade.bash.local"}]
JOBS = 2_000
BATCH = 100


async def table_size(harness) -> int:
    """Every job the executor still holds, across sessions."""
    return len(await harness.executor.list())


async def test_jobs_read_to_the_end_are_forgotten(scratch):
    async with open_harness(LOCAL, cwd=scratch) as harness:
        session = await harness.open_session(cwd=scratch)
        sizes = []

        async def one(index: int) -> None:
            handle = await session.shell.start(f"echo {index}")
            report = await session.shell.wait(handle.id)
            assert (report.state, report.stdout) == ("exited", f"{index}\n")

        for start in range(0, JOBS, BATCH):
            async with trio.open_nursery() as nursery:
                for index in range(start, start + BATCH):
                    nursery.start_soon(one, index)
            sizes.append(await table_size(harness))
        assert sizes == [0] * (JOBS // BATCH)
        with pytest.raises(UnknownJob, match=r"unknown job 'job-1' \(finished and forgotten\)"):
            await session.shell.job_output("job-1")


async def test_unread_finished_jobs_are_bounded_per_session(scratch):
    async with open_harness(LOCAL, cwd=scratch) as harness:
        busy = await harness.open_session(cwd=scratch)
        quiet = await harness.open_session(cwd=scratch)
        kept_by_quiet = [(await quiet.shell.start(f"echo quiet {n}")).id for n in range(5)]
        for job_id in kept_by_quiet:
            await quiet.shell.wait(job_id, read=False)  # settled, output left unread
        ids: list[str] = []
        sizes = []

        async def one(index: int) -> None:
            handle = await busy.shell.start(f"echo {index}")
            ids.append(handle.id)
            await busy.shell.wait(handle.id, read=False)

        for start in range(0, JOBS, BATCH):
            async with trio.open_nursery() as nursery:
                for index in range(start, start + BATCH):
                    nursery.start_soon(one, index)
            sizes.append(len(await busy.shell.list()))
        assert max(sizes) == FINISHED_JOBS_KEPT == 100
        assert await table_size(harness) == FINISHED_JOBS_KEPT + len(kept_by_quiet)
        # The other session's unread jobs are its own to keep.
        assert [h.id for h in await quiet.shell.list()] == kept_by_quiet
        report = await quiet.shell.job_output(kept_by_quiet[0])
        assert report.stdout == "quiet 0\n"
        # The busy session keeps its last 100 to finish; the first ones are forgotten.
        kept = {h.id for h in await busy.shell.list()}
        assert kept <= set(ids[-2 * BATCH :])
        forgotten = ids[0]
        with pytest.raises(UnknownJob, match="finished and forgotten"):
            await busy.shell.job_output(forgotten)
        # A kept one gives its whole output once, then it is forgotten too.
        last = sorted(kept)[0]
        assert (await busy.shell.job_output(last)).state == "exited"
        assert last not in {h.id for h in await busy.shell.list()}


async def test_the_model_is_told_a_read_job_is_forgotten(scratch):
    async with open_harness(LOCAL, cwd=scratch) as harness:
        session = await harness.open_session(cwd=scratch)
        started = await session.run_tool("bash", {"command": "echo hi", "background": True})
        job_id = started.facts["job_id"]
        await session.shell.wait(job_id, read=False)
        first = await session.run_tool("job_output", {"job_id": job_id})
        again = await session.run_tool("job_output", {"job_id": job_id})
        never = await session.run_tool("job_output", {"job_id": "job-999999"})
        sleeper = await session.run_tool("bash", {"command": "sleep 1000", "background": True})
        killed = await session.run_tool("kill_job", {"job_id": sleeper.facts["job_id"]})
        after_kill = await session.run_tool("job_output", {"job_id": sleeper.facts["job_id"]})
    assert not first.is_error and "hi" in first.text and "[exit code: 0]" in first.text
    assert again.is_error
    assert again.text.startswith(f"unknown job '{job_id}' (finished and forgotten)")
    assert "final output has been read" in again.text
    assert never.is_error and never.text.startswith("no background job 'job-999999'")
    assert not killed.is_error and "killed" in killed.text
    assert after_kill.is_error and "finished and forgotten" in after_kill.text
