"""Opening, resuming and closing sessions through the harness: a checked cwd, resuming
only on purpose, and close taking the session's background jobs with it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import trio

import stockade
from stockade import InvalidPolicy, SessionExists, SessionNotFound, StockadeError, open_harness

from ..support import pids_named
from .conftest import composition

MEMORY = [
    {"id": "sandbox", "name": "stockade.sandbox.local"},
    {"id": "bash", "name": "stockade.bash.sandbox"},
]


def logs(state_dir) -> set[str]:
    return {path.name for path in Path(state_dir).iterdir()}


# --- cwd ------------------------------------------------------------------------------


async def test_a_missing_cwd_is_refused_at_open_and_creates_nothing(state_dir, scratch):
    missing = os.path.join(scratch, "nonexistent")
    async with open_harness(composition(state_dir)) as harness:
        with pytest.raises(InvalidPolicy, match="does not exist") as refused:
            await harness.open_session(cwd=missing)
        assert missing in str(refused.value) and "existing directory" in str(refused.value)
        with pytest.raises(InvalidPolicy, match="does not exist"):
            await harness.open_session(cwd="/nonexistent")
    assert logs(state_dir) == set()


async def test_a_cwd_that_is_a_file_is_refused(state_dir, scratch):
    afile = Path(scratch) / "a-file"
    afile.write_text("")
    async with open_harness(composition(state_dir)) as harness:
        with pytest.raises(InvalidPolicy, match="is not a directory"):
            await harness.open_session(cwd=afile)
        parent = await harness.open_session(cwd=scratch)
        with pytest.raises(InvalidPolicy, match="does not exist"):
            await parent.fork_child(cwd=os.path.join(scratch, "gone"))
        with pytest.raises(InvalidPolicy, match="is not a directory"):
            await parent.fork_child(cwd=afile)
        await parent.close()
    assert logs(state_dir) == {f"{parent.id}.jsonl"}


async def test_resuming_a_session_whose_root_is_gone_says_so(state_dir, scratch):
    root = Path(scratch) / "project"
    root.mkdir()
    async with open_harness(composition(state_dir)) as harness:
        session = await harness.open_session(cwd=root)
        await session.close()
        root.rmdir()
        with pytest.raises(InvalidPolicy, match=r"workspace root .* does not exist"):
            await harness.resume_session(session.id)
        # The log is released: once the root is back, the session resumes.
        root.mkdir()
        again = await harness.resume_session(session.id)
        assert again.cwd == str(root)


# --- resume ------------------------------------------------------------------------------


async def test_resuming_an_unknown_id_raises_and_writes_nothing(state_dir, scratch):
    async with open_harness(composition(state_dir)) as harness:
        with pytest.raises(SessionNotFound, match="no session 'typo' to resume"):
            await harness.resume_session("typo")
        with pytest.raises(SessionNotFound):
            await harness.open_session(session_id="typo", cwd=scratch, resume=True)
    assert logs(state_dir) == set()
    assert (
        issubclass(SessionNotFound, StockadeError) and stockade.SessionNotFound is SessionNotFound
    )


async def test_resume_is_explicit_and_keeps_the_session(state_dir, scratch):
    async with open_harness(composition(state_dir)) as harness:
        session = await harness.open_session(cwd=scratch)
        await session.set_sandbox_mode("read-only")
        await session.close()
        resumed = await harness.resume_session(session.id)
        assert (resumed.id, resumed.cwd) == (session.id, os.path.realpath(scratch))
        assert (await resumed.sandbox_mode()).value == "read-only"
        await resumed.close()
        also = await harness.open_session(session.id, resume=True)
        assert also.id == session.id
        await also.close()
    # ...and in a new harness on the same log, as a restarted host would.
    async with open_harness(composition(state_dir)) as harness:
        resumed = await harness.resume_session(session.id, cwd=scratch)
        assert (await resumed.sandbox_mode()).value == "read-only"


async def test_creating_under_an_existing_id_is_refused(state_dir, scratch):
    async with open_harness(composition(state_dir)) as harness:
        session = await harness.open_session(session_id="named", cwd=scratch)
        assert session.id == "named"
        await session.run_tool("bash", {"command": "true"})
        await session.close()
        before = (Path(state_dir) / "named.jsonl").read_bytes()
        with pytest.raises(SessionExists, match="resume_session") as refused:
            await harness.open_session(session_id="named", cwd=scratch)
        assert "'named' already exists" in str(refused.value)
        parent = await harness.open_session(cwd=scratch)
        with pytest.raises(SessionExists):
            await parent.fork_child(session_id="named")
        with pytest.raises(ValueError, match="session_id"):
            await harness.open_session(resume=True)
    assert (Path(state_dir) / "named.jsonl").read_bytes() == before


async def test_resume_and_create_in_a_memory_log(scratch):
    """A composition without a log entry checks the same things in memory."""
    async with open_harness(MEMORY) as harness:
        with pytest.raises(SessionNotFound):
            await harness.resume_session("typo")
        created = await harness.open_session(session_id="typo", cwd=scratch)
        await created.close()
        with pytest.raises(SessionExists):
            await harness.open_session(session_id="typo", cwd=scratch)
        resumed = await harness.resume_session("typo")
        assert len(await resumed.events()) == 1


# --- close --------------------------------------------------------------------------------


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie has exited: only its entry is left for its parent to reap.
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return state != "Z"


async def started_pids(name: str, count: int) -> list[int]:
    with trio.fail_after(20):
        while len(found := pids_named(name)) < count:
            await trio.sleep(0.02)
    return found


@pytest.mark.parametrize("mode", ["workspace-write", "danger-full-access"])
async def test_closing_a_session_kills_its_background_jobs(state_dir, scratch, mode):
    mine, theirs = f"stockade-close-mine-{os.getpid()}", f"stockade-close-theirs-{os.getpid()}"
    async with open_harness(composition(state_dir)) as harness:
        session = await harness.open_session(cwd=scratch)
        await session.set_sandbox_mode(mode)
        other = await harness.open_session(cwd=scratch)
        started = await session.run_tool(
            "bash", {"command": f"(exec -a {mine} sleep 1000)", "background": True}
        )
        job_id = started.facts["job_id"]
        await other.run_tool(
            "bash", {"command": f"(exec -a {theirs} sleep 1000)", "background": True}
        )
        (pid,) = await started_pids(mine, 1)
        (their_pid,) = await started_pids(theirs, 1)
        await session.close()
        # Gone the moment close returns: killed with its process group, and reaped.
        assert not alive(pid)
        assert pids_named(mine) == []
        # Another session's job is untouched, and the closed one's is forgotten.
        assert alive(their_pid) and [h.command for h in await other.shell.list()]
        asked = await other.run_tool("job_output", {"job_id": job_id})
        assert asked.is_error and "finished and forgotten" in asked.text
        await session.close()  # idempotent
        await other.close()
        assert not alive(their_pid)


async def test_close_finishes_its_kills_even_when_cancelled(state_dir, scratch):
    name = f"stockade-close-cancelled-{os.getpid()}"
    async with open_harness(composition(state_dir)) as harness:
        session = await harness.open_session(cwd=scratch)
        await session.shell.start(f"(exec -a {name} sleep 1000)")
        (pid,) = await started_pids(name, 1)
        with trio.CancelScope() as scope:
            scope.cancel()
            await session.close()
        assert not alive(pid)


@pytest.fixture(autouse=True)
def _no_leftover_root(scratch):
    yield
    shutil.rmtree(os.path.join(scratch, "project"), ignore_errors=True)
