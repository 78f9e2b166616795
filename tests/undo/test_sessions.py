"""Undo across processes and sessions (issue 42): a harness started again on the same
log undoes a call of the earlier one, two sessions on one root keep their own
histories, and a root whose first look outlasts the wait runs its call unrecorded."""

from __future__ import annotations

from pathlib import Path

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


async def test_with_the_log_in_memory_the_history_goes_when_the_harness_stops(
    root, state_dir, monkeypatch
):
    # No log entry: the logs live in this process, and so does their history, in a
    # directory of its own under the (hidden) state directory.
    monkeypatch.setenv("STOCKADE_STATE_DIR", state_dir)
    config = [
        {"id": "sandbox", "name": "stockade.sandbox.local"},
        {"id": "bash", "name": "stockade.bash.sandbox"},
    ]
    async with open_harness(config) as harness:
        session = await harness.open_session(cwd=root)
        result = await session.run_tool("bash", {"command": "echo a > a.txt"})
        assert result.facts["changed"]["recorded"] is True
        (kept,) = (Path(state_dir) / "history").glob("process-*/*/history.sqlite")
        await session.undo((await session.undoable_calls())[0].seq)
        assert not (root / "a.txt").exists()
    assert not kept.exists()
    assert list((Path(state_dir) / "history").iterdir()) == []


def test_a_store_that_is_not_a_directory_keeps_history_in_the_state_directory(monkeypatch):
    from stockade.config import load_composition
    from stockade.harness.assembly import _history_setup

    monkeypatch.setenv("STOCKADE_STATE_DIR", "/var/lib/stockade-state")

    class Database:  # what a PostgreSQL store says of itself: no paths, a login
        def protected_paths(self) -> tuple[str, ...]:
            return ()

        def credentials(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
            return ("PGPASSWORD",), ("secret",)

        def credential_files(self) -> tuple[str, ...]:
            return ()

    class Directory(Database):
        def protected_paths(self) -> tuple[str, ...]:
            return ("/var/lib/logs",)

    composition = load_composition(
        [{"id": "bash", "name": "stockade.bash.local", "config": {"history": {"listed_paths": 3}}}]
    )
    database = _history_setup(composition, Database())
    assert (database.directory, database.scratch) == ("/var/lib/stockade-state/history", False)
    assert database.config.listed_paths == 3 and database.off is None
    assert _history_setup(composition, Directory()).directory == "/var/lib/logs/history"
