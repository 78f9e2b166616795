"""What else writes the root while an undo runs (issue 42): any session's background
job, any session's call. The plan's look and the apply are apart; a writer between them
would have its change overwritten. A call's `changed` says when a job wrote meanwhile."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import trio

from stockade import open_harness
from stockade.harness import UndoRefused

from .conftest import composition

LOOP = "for i in $(seq 400); do echo $i >> job.txt; sleep 0.05; done"


async def test_another_sessions_job_in_the_root_refuses_the_undo(state_dir, root):
    async with open_harness(composition(state_dir)) as harness:
        mine = await harness.open_session(cwd=root)
        other = await harness.open_session(cwd=root)
        await mine.run_tool("bash", {"command": "echo a > a.txt"})
        (call,) = [c.seq for c in await mine.undoable_calls()]
        started = await other.run_tool("bash", {"command": LOOP, "background": True})
        job = started.facts["job_id"]
        with pytest.raises(UndoRefused, match=f"background job {job} is still running"):
            await mine.undo(call)
        assert (root / "a.txt").read_text() == "a\n"
        await other.run_tool("kill_job", {"job_id": job})
        # The control: the job gone, the same undo goes through.
        outcome = await mine.undo(call)
        assert outcome.deleted == 1
    assert not (root / "a.txt").exists()


async def test_an_undo_waits_for_another_sessions_call_in_the_root(state_dir, root):
    async with open_harness(composition(state_dir)) as harness:
        mine = await harness.open_session(cwd=root)
        other = await harness.open_session(cwd=root)
        await mine.run_tool("bash", {"command": "echo a > a.txt"})
        (call,) = [c.seq for c in await mine.undoable_calls()]
        refusals: list[UndoRefused] = []
        seen_when_the_undo_ended: list[str] = []

        async def slow() -> None:
            # Rewrites what the undo puts back.
            await other.run_tool("bash", {"command": "touch running; sleep 1; echo theirs > a.txt"})

        async with trio.open_nursery() as nursery:
            nursery.start_soon(slow)
            await _until(lambda: (root / "running").exists())  # its window is open
            try:
                await mine.undo(call)
            except UndoRefused as refused:
                refusals.append(refused)
            theirs = root / "a.txt"
            seen_when_the_undo_ended.append(theirs.read_text() if theirs.exists() else "gone")
        # The undo looked only once the other call's command had ended (a hold per
        # session let it run at once, beside the other call's write, and delete an
        # unchanged a.txt), saw a.txt changed since and refused: the other session's
        # write is kept. Which of the two awaits returns first after the hold passes is
        # the scheduler's choice, so the order is read from the file, not the returns.
        assert seen_when_the_undo_ended == ["theirs\n"]
        (refused,) = refusals
        assert "a.txt" in str(refused)
    assert (root / "a.txt").read_text() == "theirs\n"


async def test_a_call_while_a_job_writes_says_its_record_is_partial(state_dir, root):
    async with open_harness(composition(state_dir)) as harness:
        mine = await harness.open_session(cwd=root)
        other = await harness.open_session(cwd=root)
        quiet = await mine.run_tool("bash", {"command": "echo c > c.txt"})
        assert "partial" not in quiet.facts["changed"]  # the control: no job, no claim
        started = await other.run_tool("bash", {"command": LOOP, "background": True})
        job = started.facts["job_id"]
        await trio.sleep(0.3)
        result = await mine.run_tool("bash", {"command": "sleep 0.3; echo d > d.txt"})
        changed = result.facts["changed"]
        assert "job.txt" in changed["paths"]["created"] + changed["paths"]["modified"]
        assert changed["partial"].startswith(f"background job {job} ran in the workspace")
        await other.run_tool("kill_job", {"job_id": job})


async def test_a_job_started_while_an_undo_runs_starts_after_it(state_dir, root):
    async with open_harness(composition(state_dir)) as harness:
        mine = await harness.open_session(cwd=root)
        other = await harness.open_session(cwd=root)
        made = await mine.run_tool(
            "bash", {"command": "mkdir many && for i in $(seq 3000); do : > many/$i; done"}
        )
        assert made.facts["changed"]["created"] == 3001
        (call,) = [c.seq for c in await mine.undoable_calls()]
        outcomes = []

        async def undo() -> None:
            outcomes.append(await mine.undo(call))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(undo)
            # The undo has the root (its apply of 3,001 paths takes a while).
            await _until(lambda: bool(harness.history._undoing))
            started = await other.run_tool(
                "bash", {"command": "echo late > late.txt", "background": True}
            )
        (outcome,) = outcomes
        (job,) = [j for j in await harness.executor.list() if j.id == started.facts["job_id"]]
        undone = next(e for e in await mine.events() if e.seq == outcome.event_seq)
        # The job was started only after the undo's apply and its event: it never ran
        # beside the apply (before, a job could start after the undo's one look for
        # running jobs and write between its plan and its apply).
        assert job.started_at >= undone.ts
        assert outcome.deleted == 3001


async def test_another_harness_with_a_call_in_the_root_refuses_the_undo(state_dir, root):
    # Two harnesses are two stockade processes as far as the hold goes: each has its own;
    # the lock in the root's store directory is what they share.
    async with (
        open_harness(composition(state_dir)) as first,
        open_harness(composition(state_dir)) as second,
    ):
        mine = await first.open_session(cwd=root)
        theirs = await second.open_session(cwd=root)
        await mine.run_tool("bash", {"command": "echo a > a.txt"})
        (call,) = [c.seq for c in await mine.undoable_calls()]
        refusals: list[UndoRefused] = []

        async def slow() -> None:
            await theirs.run_tool(
                "bash", {"command": "touch running; sleep 1; echo theirs > b.txt"}
            )

        async with trio.open_nursery() as nursery:
            nursery.start_soon(slow)
            await _until(lambda: (root / "running").exists())  # its window is open
            try:
                await mine.undo(call)
            except UndoRefused as refused:
                refusals.append(refused)
        (refused,) = refusals
        assert "another stockade process has a call running" in str(refused)
        assert (root / "a.txt").exists()
        # The control: that call ended, the same undo goes through.
        outcome = await mine.undo(call)
        assert outcome.deleted == 1
    assert not (root / "a.txt").exists() and (root / "b.txt").read_text() == "theirs\n"


async def _until(condition: Callable[[], bool]) -> None:
    with trio.fail_after(30):
        while not condition():
            await trio.sleep(0.01)
