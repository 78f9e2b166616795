"""Undo across processes and sessions (issue 42): a harness started again on the same
log undoes a call of the earlier one, two sessions on one root keep their own
histories, and a root whose first look outlasts the wait runs its call unrecorded."""

from __future__ import annotations

import pytest
import trio

from stockade import open_harness
from stockade.harness import UndoRefused
from stockade.history import FilesChanged

from .conftest import composition
from .support import tree_hash, write


async def test_a_restarted_harness_undoes_a_call_of_the_earlier_one(state_dir, root):
    write(f"{root}/kept.txt", "kept\n")
    before = tree_hash(root)
    async with open_harness(composition(state_dir)) as harness:
        session = await harness.open_session(cwd=root)
        await session.run_tool("bash", {"command": "echo new > new.txt; rm kept.txt"})
        (call,) = [c.seq for c in await session.undoable_calls()]
        session_id = session.id
    # Between the two processes a person edits a file: the next window's outside change.
    write(f"{root}/person.txt", "by hand\n")
    async with open_harness(composition(state_dir)) as harness:
        resumed = await harness.resume_session(session_id)
        assert [c.seq for c in await resumed.undoable_calls()] == [call]
        outcome = await resumed.undo(call)
        assert (outcome.created, outcome.deleted) == (1, 1)
        outside = [e for e in await resumed.events() if isinstance(e, FilesChanged) and e.outside]
        assert [e.change.created_paths for e in outside] == [("person.txt",)]
    (root / "person.txt").unlink()
    assert tree_hash(root) == before


async def test_two_sessions_on_one_root_keep_their_own_histories(state_dir, root):
    async with open_harness(composition(state_dir)) as harness:
        one = await harness.open_session(cwd=root)
        two = await harness.open_session(cwd=root)
        await one.run_tool("bash", {"command": "echo one > a.txt"})
        await two.run_tool("bash", {"command": "echo two > b.txt"})
        (first,) = await one.undoable_calls()
        (second,) = await two.undoable_calls()
        assert first.summary == "echo one > a.txt" and second.summary == "echo two > b.txt"
        await one.undo(first.seq)
        assert not (root / "a.txt").exists() and (root / "b.txt").read_text() == "two\n"
        assert [c.undone for c in await two.undoable_calls()] == [False]
        # One session's call over the other's file: the other's undo is refused.
        await one.run_tool("bash", {"command": "echo over > b.txt"})
        with pytest.raises(UndoRefused, match=r"b\.txt"):
            await two.undo(second.seq)
        assert (root / "b.txt").read_text() == "over\n"


async def test_a_root_whose_first_look_is_slow_runs_its_call_unrecorded(state_dir, root):
    for i in range(3000):
        write(f"{root}/d{i % 30}/f{i}.txt", f"{i}\n")
    config = composition(state_dir, history={"baseline_wait": 0})
    async with open_harness(config) as harness:
        session = await harness.open_session(cwd=root)
        first = await session.run_tool("bash", {"command": "echo early > early.txt"})
        assert first.facts["changed"]["recorded"] is False
        assert "still running" in first.facts["changed"]["reason"]
        assert (root / "early.txt").read_text() == "early\n"  # the call ran
        with trio.fail_after(60):
            for attempt in range(10_000):
                later = await session.run_tool("bash", {"command": f"echo {attempt} > {attempt}"})
                if later.facts["changed"]["recorded"]:
                    break
                await trio.sleep(0.2)
        # Recorded from the first call after the look ended.
        assert later.facts["changed"]["paths"]["created"] == [str(attempt)]
