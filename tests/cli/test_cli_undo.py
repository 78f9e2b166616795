"""`stockade session undo` as a person runs it (issue 42): the real command in a
subprocess, against a session a library harness made on the real sandbox (each
backend), judged on the workspace on disk and in the session's log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from ..support import require_backend

pytestmark = pytest.mark.kernel

# The library's session: two bash calls that change files, printed as their seqs.
MAKE = """
import json, sys, trio
from stockade import open_harness

COMMANDS = [
    "echo one > a.txt; echo keep > b.txt",
    "echo two > a.txt; rm b.txt; mkdir d; echo new > d/new.txt",
]

async def main(session_id, cwd, hold, config):
    async with open_harness(config) as harness:
        session = await harness.open_session(session_id, cwd=cwd)
        for command in COMMANDS:
            result = await session.run_tool("bash", {"command": command})
            assert result.facts.get("exit_code") == 0, result.text
        print(json.dumps([call.seq for call in await session.undoable_calls()]), flush=True)
        if hold == "hold":
            await trio.to_thread.run_sync(sys.stdin.read)
        await session.close()

trio.run(main, *sys.argv[1:5])
"""


@pytest.fixture(params=["bwrap", "landlock"])
def backend(request):
    require_backend(request.param)
    return request.param


@pytest.fixture
def place(scratch, backend):
    """(workspace root, state dir, composition file): the log and the composition
    outside the root, a composition that forces the backend."""
    base = Path(scratch)
    root, state = base / "root", base / "state"
    root.mkdir()
    state.mkdir(mode=0o700)
    config = base / "stockade.yml"
    config.write_text(
        f"""
- id: sandbox
  name: stockade.sandbox.local
  config: {{backend: {backend}}}
- id: bash
  name: stockade.bash.sandbox
  config:
    mode: workspace-write
    workspace_root: !cwd
- id: approval
  name: stockade.approval.user
  config: {{policy: ask, answerers: [terminal]}}
- id: permission
  name: stockade.permission.presets
- id: log
  name: stockade.session.log
  config: {{state_dir: {state}}}
- id: fs
  name: stockade.fs.sandbox
"""
    )
    return root, state, config


def env_for(config: Path) -> dict[str, str]:
    return {**os.environ, "STOCKADE_CONFIG": str(config), "STOCKADE_STATE_DIR": ""}


def make_session(place, session_id: str, *, hold: bool = False):
    """The session, by the library in a child process; (its call seqs, the process:
    holding the session open until its stdin closes when `hold`)."""
    root, _state, config = place
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            MAKE,
            session_id,
            str(root),
            "hold" if hold else "close",
            str(config),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=root,
        env=env_for(config),
    )
    seqs = json.loads(child.stdout.readline())
    if not hold:
        assert child.wait(timeout=60) == 0
    return seqs, child


def undo(place, *args: str):
    _root, _state, config = place
    # Run from elsewhere: the session's root comes from its log, not the cwd.
    return subprocess.run(
        [sys.executable, "-m", "stockade", "session", "undo", *args],
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
        cwd=tempfile.gettempdir(),
        env=env_for(config),
    )


def tree(root: Path) -> dict[str, str | None]:
    """Every path under the root: a file's content, None for a directory."""
    found: dict[str, str | None] = {}
    for path in sorted(root.rglob("*")):
        relative = str(path.relative_to(root))
        found[relative] = None if path.is_dir() else path.read_text()
    return found


def log(state: Path, session_id: str) -> list[dict]:
    lines = (state / f"{session_id}.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


AFTER_BOTH = {"a.txt": "two\n", "d": None, "d/new.txt": "new\n"}
AFTER_FIRST = {"a.txt": "one\n", "b.txt": "keep\n"}


def test_lists_undoes_one_call_and_restores(place):
    root, state, _config = place
    (first, second), _ = make_session(place, "undo-me")
    assert tree(root) == AFTER_BOTH

    listed = undo(place, "undo-me")
    assert listed.returncode == 0, listed.stderr
    header, *rows = listed.stdout.splitlines()
    assert header.split() == ["CALL", "TOOL", "CREATED", "MODIFIED", "DELETED", "UNDONE", "SUMMARY"]
    assert [row.split()[:6] for row in rows] == [
        [str(first), "bash", "2", "0", "0", "no"],
        [str(second), "bash", "2", "1", "1", "no"],
    ]
    assert rows[1].endswith("echo two > a.txt; rm b.txt; mkdir d; echo new > d/new.txt")

    # The first call's files were changed by the second since: refused, nothing touched.
    refused = undo(place, "undo-me", "--call", str(first))
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.count("\n") == 1
    assert refused.stderr.startswith(f"stockade: cannot undo call {first}: ")
    assert f"a.txt: call {second} changed it since" in refused.stderr
    assert refused.stderr.rstrip().endswith(f"in the way: seq {second}")
    assert tree(root) == AFTER_BOTH

    done = undo(place, "undo-me", "--call", str(second))
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        f"undid call {second}: 2 created removed, 1 modified put back, 1 deleted restored\n"
    )
    assert tree(root) == AFTER_FIRST
    [undone] = [event for event in log(state, "undo-me") if event["type"] == "files/undone"]
    assert undone["call"] == second

    again = undo(place, "undo-me", "--json")
    calls = json.loads(again.stdout)["calls"]
    assert [(call["seq"], call["undone"]) for call in calls] == [(first, False), (second, True)]

    restored = undo(place, "undo-me", "--to", str(first), "--json")
    assert restored.returncode == 0, restored.stdout
    outcome = json.loads(restored.stdout)["outcome"]
    assert (outcome["kind"], outcome["target"], outcome["deleted"]) == ("restore", first, 2)
    assert tree(root) == {}
    [event] = [event for event in log(state, "undo-me") if event["type"] == "files/restored"]
    assert event["seq"] == outcome["event_seq"] and event["before"] == first


def test_an_edit_made_since_refuses_the_undo_and_is_kept(place):
    root, _state, _config = place
    (_first, second), _ = make_session(place, "edited")
    (root / "a.txt").write_text("the person's edit\n")
    refused = undo(place, "edited", "--call", str(second), "--json")
    assert refused.returncode == 1 and refused.stderr == ""
    error = json.loads(refused.stdout)["error"]
    assert error["code"] == "UNDO_REFUSED"
    assert any(conflict.startswith("a.txt: ") for conflict in error["conflicts"])
    assert error["detail"].startswith(f"cannot undo call {second}")
    assert (root / "a.txt").read_text() == "the person's edit\n"
    assert (root / "d" / "new.txt").exists() and not (root / "b.txt").exists()


def test_a_session_held_open_by_another_process_is_refused(place):
    root, _state, _config = place
    (_first, second), holder = make_session(place, "held", hold=True)
    try:
        refused = undo(place, "held", "--call", str(second))
        as_json = undo(place, "held", "--json")
    finally:
        holder.stdin.close()
        assert holder.wait(timeout=60) == 0
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.startswith("stockade: session 'held' is already open for writing")
    assert refused.stderr.count("\n") == 1
    assert json.loads(as_json.stdout)["error"]["code"] == "SESSION_LOCKED"
    assert tree(root) == AFTER_BOTH
    # Closed, the person may undo.
    assert undo(place, "held", "--call", str(second)).returncode == 0
    assert tree(root) == AFTER_FIRST


def test_unknown_ids_and_usage_errors(place):
    cases = [
        (("nobody-here", "--json"), "SESSION_NOT_FOUND", 1),
        (("bad id", "--json"), "INVALID_SESSION_ID", 1),
        (("x", "--call", "1", "--to", "1", "--json"), "USAGE", 2),
        (("x", "--call", "0", "--json"), "USAGE", 2),
        (("x", "--to", "seven", "--json"), "USAGE", 2),
    ]
    for args, code, status in cases:
        done = undo(place, *args)
        assert done.returncode == status, (args, done.stdout, done.stderr)
        assert done.stderr == "", args
        assert json.loads(done.stdout)["error"]["code"] == code, args
    plain = undo(place, "nobody-here")
    assert plain.returncode == 1 and plain.stdout == ""
    assert plain.stderr.startswith("stockade: no session 'nobody-here' to resume")
