"""Undo through the harness (issue 42), on both backends: what a call changed is in its
result and the log, an undo puts the tree back exactly, a later call in the way is
named, a restore goes back to before any call."""

from __future__ import annotations

import os

import pytest
import trio

from stockade import open_harness
from stockade.harness import UndoRefused
from stockade.history import FilesChanged, FilesRestored, FilesUndone

from ..support import REAL_BACKENDS, require_backend
from .conftest import composition
from .support import populate, tree_hash, write

# One call that creates, modifies, deletes, renames, chmods and links.
EVERYTHING = (
    "set -e; mkdir -p new/deep && echo created > new/deep/file.txt; "
    "echo '# rewritten' > README.md; rm -r docs; mv src/lib src/library; "
    "mv src/app.py src/main.py; chmod 600 src/main.py; chmod 750 src; "
    "rm src/util-link; ln -s library/util.py src/util-link; "
    "ln -s /etc/passwd outside-link; mkdir -m 700 empty"
)


@pytest.fixture(params=REAL_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    require_backend(request.param)
    return str(request.param)


async def test_a_call_that_does_everything_is_undone_exactly(state_dir, root, backend):
    populate(str(root))
    before = tree_hash(root)
    async with open_harness(composition(state_dir, backend=backend)) as harness:
        session = await harness.open_session(cwd=root)
        result = await session.run_tool("bash", {"command": EVERYTHING})
        assert result.facts.get("exit_code") == 0, result.text
        changed = result.facts["changed"]
        assert changed["recorded"] is True
        assert changed["created"] and changed["modified"] and changed["deleted"]
        assert "new/deep/file.txt" in changed["paths"]["created"]
        assert "README.md" in changed["paths"]["modified"]
        assert "docs/guide.md" in changed["paths"]["deleted"]
        # The sandbox's placeholders (mount points for covers) are no change of the call.
        listed = [p for kind in changed["paths"].values() for p in kind]
        assert not any(p in (".mcp.json", ".vscode", "stockade.yml") for p in listed)
        assert tree_hash(root) != before
        events = await session.events()
        call = next(e.seq for e in events if e.tag == "tool/call")
        (recorded,) = [e for e in events if isinstance(e, FilesChanged)]
        assert recorded.call == call and not recorded.outside
        assert recorded.change.created == changed["created"]

        calls = await session.undoable_calls()
        assert [(c.seq, c.tool, c.undone) for c in calls] == [(call, "bash", False)]
        assert calls[0].summary.startswith("set -e; mkdir -p new/deep")

        outcome = await session.undo(call)
        assert outcome.kind == "undo" and outcome.target == call and outcome.left == ()
        assert tree_hash(root) == before
        assert isinstance((await session.events())[outcome.event_seq - 1], FilesUndone)
        assert [c.undone for c in await session.undoable_calls()] == [True]
        # Undone twice: refused, nothing touched.
        with pytest.raises(UndoRefused, match="already undone"):
            await session.undo(call)
        assert tree_hash(root) == before
    assert os.readlink(root / "src" / "util-link") == "lib/util.py"
    assert oct(os.stat(root / "src" / "app.py").st_mode & 0o777) == "0o755"


async def test_the_fs_tools_are_recorded_and_undone(state_dir, root):
    populate(str(root))
    before = tree_hash(root)
    async with open_harness(composition(state_dir, fs=True)) as harness:
        session = await harness.open_session(cwd=root)
        written = await session.run_tool("write_file", {"path": "src/new.md", "content": "n\n"})
        assert not written.is_error, written.text
        assert written.facts["changed"]["paths"]["created"] == ["src/new.md"]
        edited = await session.run_tool(
            "edit_file", {"path": "README.md", "old": "project", "new": "renamed"}
        )
        assert not edited.is_error, edited.text
        assert edited.facts["changed"]["paths"]["modified"] == ["README.md"]
        read = await session.run_tool("read_file", {"path": "README.md"})
        assert "changed" not in read.facts
        calls = await session.undoable_calls()
        assert [(c.tool, c.summary) for c in calls] == [
            ("write_file", "src/new.md"),
            ("edit_file", "README.md"),
        ]
        # The edit first (the write is independent of it), then the write.
        await session.undo(calls[1].seq)
        assert (root / "README.md").read_text() == "# project\n"
        await session.undo(calls[0].seq)
    assert tree_hash(root) == before


async def test_a_later_call_in_the_way_is_named_and_a_restore_goes_back(state_dir, root):
    write(f"{root}/app.py", "v0\n")
    before = tree_hash(root)
    async with open_harness(composition(state_dir)) as harness:
        session = await harness.open_session(cwd=root)
        await session.run_tool("bash", {"command": "echo v1 > app.py; echo x > extra.txt"})
        await session.run_tool("bash", {"command": "echo v2 > app.py"})
        first, second = (c.seq for c in await session.undoable_calls())
        with pytest.raises(UndoRefused) as refused:
            await session.undo(first)
        assert refused.value.conflicting_calls == (second,)
        assert refused.value.conflicts == (f"app.py: call {second} changed it since",)
        assert f"call {second}" in str(refused.value) and "\n" not in str(refused.value)
        assert (root / "app.py").read_text() == "v2\n"  # nothing touched
        outcome = await session.restore(first)
        assert outcome.kind == "restore" and outcome.target == first
        assert (outcome.created, outcome.modified, outcome.deleted) == (0, 1, 1)
        assert set(outcome.paths) == {"app.py", "extra.txt"}
        assert tree_hash(root) == before
        events = await session.events()
        assert isinstance(events[outcome.event_seq - 1], FilesRestored)
        # A restore is a record too: the earlier calls' paths changed since.
        with pytest.raises(UndoRefused, match="restore to seq"):
            await session.undo(second)


async def test_what_cannot_be_undone_is_refused_in_one_line(state_dir, root):
    async with open_harness(composition(state_dir)) as harness:
        session = await harness.open_session(cwd=root)
        quiet = await session.run_tool("bash", {"command": "true"})
        assert quiet.facts["changed"]["created"] == 0
        call = next(e.seq for e in await session.events() if e.tag == "tool/call")
        with pytest.raises(UndoRefused, match="changed nothing that was recorded"):
            await session.undo(call)
        with pytest.raises(UndoRefused, match="not a call of this session"):
            await session.undo(999)
        with pytest.raises(UndoRefused, match="not in this session's log"):
            await session.restore(999)
        with pytest.raises(UndoRefused, match="nothing was recorded after"):
            await session.restore(call)
        await session.set_sandbox_mode("read-only")
        read_only = await session.run_tool("bash", {"command": "ls"})
        assert "changed" not in read_only.facts


async def test_history_off_records_nothing(state_dir, root):
    async with open_harness(composition(state_dir, history="off")) as harness:
        session = await harness.open_session(cwd=root)
        result = await session.run_tool("bash", {"command": "echo a > a.txt"})
        assert "changed" not in result.facts
        assert await session.undoable_calls() == []
        with pytest.raises(UndoRefused, match="history is off"):
            await session.undo(2)
    assert not os.path.exists(os.path.join(state_dir, "history"))


async def test_an_undo_waits_for_no_running_job_and_refuses_while_one_runs(state_dir, root):
    async with open_harness(composition(state_dir)) as harness:
        session = await harness.open_session(cwd=root)
        await session.run_tool("bash", {"command": "echo a > a.txt"})
        (call,) = [c.seq for c in await session.undoable_calls()]
        started = await session.run_tool("bash", {"command": "sleep 30", "background": True})
        job = started.facts["job_id"]
        with pytest.raises(UndoRefused, match=f"background job {job}.*still running"):
            await session.undo(call)
        assert (root / "a.txt").exists()
        await session.run_tool("kill_job", {"job_id": job})
        await session.undo(call)
    assert not (root / "a.txt").exists()


async def test_an_undo_waits_for_the_sessions_running_call_and_holds_the_next(state_dir, root):
    async with open_harness(composition(state_dir)) as harness:
        session = await harness.open_session(cwd=root)
        await session.run_tool("bash", {"command": "echo a > a.txt"})
        (first,) = [c.seq for c in await session.undoable_calls()]
        done: list[str] = []

        async def slow() -> None:
            await session.run_tool("bash", {"command": "sleep 1; echo late > late.txt"})
            done.append("call")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(slow)
            await trio.sleep(0.5)  # the slow call's window is open
            outcome = await session.undo(first)
            done.append("undo")
        assert done == ["call", "undo"]
        events = await session.events()
        late = next(e for e in events if isinstance(e, FilesChanged) and e.seq > first + 1)
        assert late.change.created_paths == ("late.txt",) and outcome.event_seq > late.seq
    assert not (root / "a.txt").exists() and (root / "late.txt").exists()
