"""What writes a root an undo puts back, beyond the calls rooted exactly there (issue 42):
a background job of another stockade process (the person's `stockade session undo` is
one), calls and jobs rooted above or within the undo's root, in this harness or in
another, and a session whose extra writable roots hold it. Each is refused or waited for;
the controls show the same undo goes through once the writer ended, and that a writer
beside the root (not above, not within) is not in its way.

Two harnesses in one test are two stockade processes as far as the undo goes: each has
its own holds and jobs; the lock files in the history's directory are what they share.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import trio

from stockade import open_harness
from stockade.harness import UndoRefused

from .conftest import composition

LOOP = "for i in $(seq 600); do echo $i > job.txt; sleep 0.05; done"
SLOW = "touch {running}; sleep 1; echo theirs > {target}"


async def test_another_processs_background_job_refuses_the_undo(state_dir, root):
    async with open_harness(composition(state_dir)) as agent:
        mine = await agent.open_session(cwd=root)
        other = await agent.open_session(cwd=root)
        await mine.run_tool("bash", {"command": "echo a > a.txt"})
        (call,) = [c.seq for c in await mine.undoable_calls()]
        session_id = mine.id
        await mine.close()
        started = await other.run_tool("bash", {"command": LOOP, "background": True})
        job = started.facts["job_id"]
        await _until(lambda: (root / "job.txt").exists())
        # The person's undo, from another stockade process (as the CLI does it).
        async with open_harness(composition(state_dir), answerers=()) as person:
            resumed = await person.resume_session(session_id)
            with pytest.raises(UndoRefused, match="background job of another stockade process"):
                await resumed.undo(call)
            assert (root / "a.txt").read_text() == "a\n"
            # The job writes on (the undo did not stop it, nor wait for it).
            seen = (root / "job.txt").read_text()
            await _until(lambda: (root / "job.txt").read_text() != seen)
            await other.run_tool("kill_job", {"job_id": job})
            # The control: its job ended (killed, reaped), the same undo goes through
            # (once the agent's harness has let go of its locks: a moment).
            outcome = await _eventually(lambda: resumed.undo(call))
            # Its own record is the undo's alone: what the job wrote is not in it.
            assert outcome.deleted == 1 and outcome.paths == ("a.txt",)
            await resumed.close()
    assert not (root / "a.txt").exists()


async def test_a_background_job_that_ended_by_itself_lets_another_processs_undo_go(state_dir, root):
    async with (
        open_harness(composition(state_dir)) as agent,
        open_harness(composition(state_dir)) as person,
    ):
        working = await agent.open_session(cwd=root)
        mine = await person.open_session(cwd=root)
        await mine.run_tool("bash", {"command": "echo a > a.txt"})
        (call,) = [c.seq for c in await mine.undoable_calls()]
        started = await working.run_tool(
            "bash", {"command": "sleep 2; echo done > job.txt", "background": True}
        )
        with pytest.raises(UndoRefused, match="background job of another stockade process"):
            await mine.undo(call)
        # Nobody reads its output: the job's end alone lets its locks go.
        job = started.facts["job_id"]
        await _until(lambda: (root / "job.txt").exists())
        outcome = await _eventually(lambda: mine.undo(call))
        assert outcome.deleted == 1
        listed = [j for j in await agent.executor.list() if j.id == job]
        assert [j.state for j in listed] == ["exited"]
    assert not (root / "a.txt").exists() and (root / "job.txt").exists()


@pytest.mark.parametrize(
    ("mine_at", "theirs_at"),
    [("", "sub"), ("sub", ""), ("", "")],
    ids=["theirs-within", "theirs-above", "control-same-root"],
)
async def test_an_undo_waits_for_a_call_rooted_above_or_within_its_root(
    state_dir, root, mine_at, theirs_at
):
    sub = root / "sub"
    sub.mkdir()
    async with open_harness(composition(state_dir)) as harness:
        mine = await harness.open_session(cwd=root / mine_at)
        theirs = await harness.open_session(cwd=root / theirs_at)
        target = sub / "a.txt"
        await mine.run_tool("bash", {"command": f"echo mine > {target}"})
        (call,) = [c.seq for c in await mine.undoable_calls()]
        running = root / theirs_at / "running"
        refusals: list[UndoRefused] = []
        seen_when_the_undo_ended: list[str] = []

        async def slow() -> None:
            # Rewrites what the undo puts back (deletes).
            await theirs.run_tool("bash", {"command": SLOW.format(running=running, target=target)})

        async with trio.open_nursery() as nursery:
            nursery.start_soon(slow)
            await _until(running.exists)  # its window is open
            try:
                await mine.undo(call)
            except UndoRefused as refused:
                refusals.append(refused)
            seen_when_the_undo_ended.append(target.read_text() if target.exists() else "gone")
        # The undo looked only once the other call ended (before, with the other call
        # rooted above or within, it ran at once, deleted an unchanged a.txt, and the
        # call wrote it again after): it saw a.txt changed since and refused.
        assert seen_when_the_undo_ended == ["theirs\n"]
        (refused,) = refusals
        assert "a.txt" in str(refused)
    assert target.read_text() == "theirs\n"


async def test_a_job_rooted_within_refuses_the_undo(state_dir, root):
    sub = root / "sub"
    sub.mkdir()
    async with open_harness(composition(state_dir)) as harness:
        mine = await harness.open_session(cwd=root)
        theirs = await harness.open_session(cwd=sub)
        await mine.run_tool("bash", {"command": "echo a > a.txt"})
        (call,) = [c.seq for c in await mine.undoable_calls()]
        started = await theirs.run_tool("bash", {"command": LOOP, "background": True})
        job = started.facts["job_id"]
        with pytest.raises(UndoRefused, match=f"background job {job} is still running"):
            await mine.undo(call)
        assert (root / "a.txt").exists()
        await theirs.run_tool("kill_job", {"job_id": job})
        # The control: the job gone, the same undo goes through.
        assert (await mine.undo(call)).deleted == 1
    assert not (root / "a.txt").exists()


@pytest.mark.parametrize(
    ("mine_at", "theirs_at", "refusal"),
    [
        ("", "sub", "another stockade process has a call running in a folder within"),
        ("sub", "", "another stockade process has a call running in {root}, which holds"),
        ("left", "right", None),
    ],
    ids=["theirs-within", "theirs-above", "control-beside"],
)
async def test_another_processs_call_rooted_above_or_within_refuses_the_undo(
    state_dir, root, mine_at, theirs_at, refusal
):
    for name in ("sub", "left", "right"):
        (root / name).mkdir()
    async with (
        open_harness(composition(state_dir)) as first,
        open_harness(composition(state_dir)) as second,
    ):
        mine = await first.open_session(cwd=root / mine_at)
        theirs = await second.open_session(cwd=root / theirs_at)
        made = root / mine_at / "a.txt"
        await mine.run_tool("bash", {"command": f"echo a > {made}"})
        (call,) = [c.seq for c in await mine.undoable_calls()]
        running = root / theirs_at / "running"
        outcomes: list[object] = []

        async def slow() -> None:
            command = SLOW.format(running=running, target=root / theirs_at / "b.txt")
            await theirs.run_tool("bash", {"command": command})

        async with trio.open_nursery() as nursery:
            nursery.start_soon(slow)
            await _until(running.exists)  # its window is open
            try:
                outcomes.append(await mine.undo(call))
            except UndoRefused as refused:
                outcomes.append(refused)
            call_running = not (root / theirs_at / "b.txt").exists()
        (outcome,) = outcomes
        assert call_running  # the undo returned while the other call still ran
        if refusal is None:
            # Beside each other: neither root holds the other, the undo goes at once.
            assert not isinstance(outcome, UndoRefused) and not made.exists()
            return
        assert isinstance(outcome, UndoRefused)
        assert refusal.format(root=root) in str(outcome)
        assert made.exists()
        # The control: that call ended, the same undo goes through.
        assert (await mine.undo(call)).deleted == 1
    assert not made.exists()


async def test_an_undo_waits_for_a_call_whose_extra_writable_root_holds_it(
    state_dir, root, scratch
):
    elsewhere = Path(scratch) / "elsewhere"
    elsewhere.mkdir()
    async with open_harness(composition(state_dir)) as harness:
        mine = await harness.open_session(cwd=root)
        theirs = await harness.open_session(cwd=elsewhere, writable_roots=[str(root)])
        target = root / "a.txt"
        await mine.run_tool("bash", {"command": "echo mine > a.txt"})
        (call,) = [c.seq for c in await mine.undoable_calls()]
        running = elsewhere / "running"
        seen_when_the_undo_ended: list[str] = []

        async def slow() -> None:
            await theirs.run_tool("bash", {"command": SLOW.format(running=running, target=target)})

        async with trio.open_nursery() as nursery:
            nursery.start_soon(slow)
            await _until(running.exists)
            with pytest.raises(UndoRefused, match=r"a\.txt"):
                await mine.undo(call)
            seen_when_the_undo_ended.append(target.read_text() if target.exists() else "gone")
        # It waited for the call writing its root from another session's root.
        assert seen_when_the_undo_ended == ["theirs\n"]
    assert target.read_text() == "theirs\n"


async def _until(condition: Callable[[], bool]) -> None:
    with trio.fail_after(30):
        while not condition():
            await trio.sleep(0.01)


async def _eventually(undo: Callable[[], object]) -> object:
    """The undo, tried again while the ended job's locks are let go (a moment)."""
    with trio.fail_after(10):
        while True:
            try:
                return await undo()  # type: ignore[misc]
            except UndoRefused as refused:
                if "background job of another stockade process" not in str(refused):
                    raise
            await trio.sleep(0.05)
