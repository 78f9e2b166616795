"""A root past its paths budget through the harness (docs/undo.md): the call that passes
it runs unrecorded and says why, the session's log says once that the root's history
stopped, later calls there pay nothing (no tracker is kept), and an undo there is
refused in one line; a root already past it when history opens never starts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stockade import open_harness
from stockade.harness import UndoRefused
from stockade.history import FilesChanged, HistoryStopped

from .conftest import composition
from .support import tree_hash, write

BUDGET = 40


def _stopped_line(root: Path) -> str:
    return (
        f"the undo history of {os.path.realpath(root)} stopped: it holds more than {BUDGET} "
        "paths (history.paths_budget); undo is unavailable there: raise the budget or leave "
        "the bulk's directories out in .gitignore, then restart the harness"
    )


def _call_seqs(events) -> list[int]:
    return [e.seq for e in events if e.tag == "tool/call"]


async def test_a_call_past_the_budget_stops_the_history_of_its_root(state_dir, root):
    async with open_harness(composition(state_dir, history={"paths_budget": BUDGET})) as harness:
        session = await harness.open_session(cwd=root)
        first = await session.run_tool("bash", {"command": "echo a > a.txt"})
        assert first.facts["changed"]["recorded"] is True
        (kept,) = Path(state_dir, "history").glob("*/history.sqlite")
        (held,) = harness.history._roots.values()
        tracker = held.tracker
        assert tracker is not None

        many = await session.run_tool(
            "bash", {"command": f"mkdir many && touch many/f{{1..{20 * BUDGET}}}"}
        )
        assert many.facts.get("exit_code") == 0, many.text
        assert len(os.listdir(root / "many")) == 20 * BUDGET  # the call ran whole
        # Its record says it is not recorded, and why, in the words an undo refuses with.
        assert many.facts["changed"] == {"recorded": False, "reason": _stopped_line(root)}
        events = await session.events()
        first_call, many_call = _call_seqs(events)
        (stopped,) = [e for e in events if isinstance(e, HistoryStopped)]
        assert stopped.root == os.path.realpath(root)
        assert stopped.reason == _stopped_line(root) and stopped.call == many_call
        changed = [e.call for e in events if isinstance(e, FilesChanged)]
        assert changed == [first_call]  # nothing of the call that passed the budget
        # No tracker is kept for the root, and the one it had holds nothing any more.
        assert held.tracker is None and held.stopped == _stopped_line(root)
        assert tracker.stopped and len(tracker.index) == 0
        assert tracker.watcher is None and tracker.root_fd == -1

        later = await session.run_tool("bash", {"command": "echo b > b.txt"})
        assert later.facts["changed"] == {"recorded": False, "reason": _stopped_line(root)}
        assert held.tracker is None
        events = await session.events()
        assert len([e for e in events if isinstance(e, HistoryStopped)]) == 1  # said once

        before = tree_hash(root)
        for undo in (lambda: session.undo(first_call), lambda: session.undo(many_call)):
            with pytest.raises(UndoRefused) as refused:
                await undo()
            assert str(refused.value) == _stopped_line(root)
        with pytest.raises(UndoRefused, match="stopped: it holds more than 40 paths"):
            await session.restore(first_call)
        assert tree_hash(root) == before  # nothing touched
        # Nothing is listed as undoable while none can be: the same line says why.
        with pytest.raises(UndoRefused) as refused:
            await session.undoable_calls()
        assert str(refused.value) == _stopped_line(root)
        assert kept.exists()  # the store is kept whole
    assert (root / "a.txt").exists()


async def test_a_root_past_the_budget_when_history_opens_never_starts(state_dir, root):
    for i in range(2 * BUDGET):
        write(f"{root}/src/f{i}.txt", f"{i}\n")
    async with open_harness(composition(state_dir, history={"paths_budget": BUDGET})) as harness:
        one = await harness.open_session(cwd=root)
        for _ in range(3):
            result = await one.run_tool("bash", {"command": "echo x >> log.txt"})
            assert result.facts["changed"] == {"recorded": False, "reason": _stopped_line(root)}
        events = await one.events()
        (stopped,) = [e for e in events if isinstance(e, HistoryStopped)]  # said once
        assert stopped.call == _call_seqs(events)[0]
        assert not [e for e in events if isinstance(e, FilesChanged)]
        (held,) = harness.history._roots.values()
        assert held.tracker is None
        with pytest.raises(UndoRefused) as refused:
            await one.undo(_call_seqs(events)[0])
        assert str(refused.value) == _stopped_line(root)
        # Another session working there is told too, once, in its own log.
        two = await harness.open_session(cwd=root)
        await two.run_tool("bash", {"command": "true"})
        await two.run_tool("bash", {"command": "true"})
        told = [e for e in await two.events() if isinstance(e, HistoryStopped)]
        assert [e.reason for e in told] == [_stopped_line(root)]
    assert (root / "log.txt").read_text() == "x\n" * 3


async def test_an_undo_that_puts_back_past_the_budget_is_done_and_then_stops(state_dir, root):
    for i in range(BUDGET - 10):
        write(f"{root}/d/f{i}.txt", f"{i}\n")
    async with open_harness(composition(state_dir, history={"paths_budget": BUDGET})) as harness:
        session = await harness.open_session(cwd=root)
        await session.run_tool("bash", {"command": "rm -r d"})
        await session.run_tool(
            "bash",
            {"command": f"mkdir e && for i in $(seq {BUDGET - 10}); do echo $i > e/$i; done"},
        )
        removal, _ = (c.seq for c in await session.undoable_calls())
        # Putting d back makes 62 paths: the undo is done, its own record cannot be kept.
        outcome = await session.undo(removal)
        assert (outcome.created, outcome.left) == (BUDGET - 10 + 1, ())
        assert (root / "d" / "f3.txt").read_text() == "3\n"
        events = await session.events()
        undone = events[outcome.event_seq - 1]
        assert undone.tag == "files/undone" and undone.change.manifest is None
        (stopped,) = [e for e in events if isinstance(e, HistoryStopped)]
        assert stopped.seq > undone.seq and stopped.call is None
        with pytest.raises(UndoRefused, match="stopped: it holds more than 40 paths"):
            await session.restore(removal)
        assert (root / "d").exists() and (root / "e").exists()


async def test_a_call_that_writes_long_ignore_files_stops_the_history_with_its_reason(
    state_dir, root
):
    rules = 30
    line = (
        f"the undo history of {os.path.realpath(root)} stopped: it holds more than "
        f"{rules} ignore rules in .gitignore (history.rules_budget); undo is unavailable "
        "there: raise the budget or shorten its ignore files, then restart the harness"
    )
    async with open_harness(composition(state_dir, history={"rules_budget": rules})) as harness:
        session = await harness.open_session(cwd=root)
        first = await session.run_tool("bash", {"command": "echo a > a.txt"})
        assert first.facts["changed"]["recorded"] is True
        long = await session.run_tool(
            "bash", {"command": "for i in $(seq 5000); do echo rule$i; done > .gitignore"}
        )
        assert long.facts.get("exit_code") == 0, long.text
        assert long.facts["changed"] == {"recorded": False, "reason": line}
        (stopped,) = [e for e in await session.events() if isinstance(e, HistoryStopped)]
        assert stopped.reason == line
        with pytest.raises(UndoRefused) as refused:
            await session.undo(_call_seqs(await session.events())[0])
        assert str(refused.value) == line
    assert (root / "a.txt").exists()
