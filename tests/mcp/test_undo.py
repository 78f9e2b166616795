"""The MCP `undo` tool (issue 42), driven by the SDK's own client in both protocol eras:
the person is asked through elicitation before anything is put back (accepts: the
files are back on disk; declines: nothing changed), a client that cannot ask is
refused with the command the person can run, and a composition with
`model_may_undo: true` undoes without a question. Real sandbox, real processes."""

from __future__ import annotations

from pathlib import Path

import pytest

from stockade.trust import ROOT_PROTECTED

from .support import ERAS, answering, connect, events, of_type, session_id, text

pytestmark = pytest.mark.kernel

FIRST = "echo one > a.txt; echo keep > b.txt"
SECOND = "echo two > a.txt; rm b.txt; mkdir d; echo new > d/new.txt"
AFTER_BOTH = {"a.txt": "two\n", "d": None, "d/new.txt": "new\n"}
AFTER_FIRST = {"a.txt": "one\n", "b.txt": "keep\n"}
PROTECTED_NAMES = {name.rstrip("/") for name in ROOT_PROTECTED}


def tree(root: Path) -> dict[str, str | None]:
    """The workspace's own files (not the sandbox's placeholders for the protected
    names, `.git`, `stockade.yml` and the agents' settings, there while it runs)."""
    return {
        str(path.relative_to(root)): None if path.is_dir() else path.read_text()
        for path in sorted(root.rglob("*"))
        if not path.relative_to(root).parts[0].startswith(".")
        and path.relative_to(root).parts[0] not in PROTECTED_NAMES
    }


async def two_calls(client) -> tuple[int, int]:
    """The two bash calls, and their seqs as the undo tool lists them."""
    for command in (FIRST, SECOND):
        result = await client.call_tool("bash", {"command": command})
        assert not result.is_error, text(result)
    listed = await client.call_tool("undo", {})
    assert not listed.is_error, text(listed)
    calls = listed.structured_content["calls"]
    assert [(call["tool"], call["summary"]) for call in calls] == [
        ("bash", FIRST),
        ("bash", SECOND),
    ]
    first, second = (call["seq"] for call in calls)
    assert text(listed).splitlines()[1] == (
        f"call {second}: bash (2 created, 1 modified, 1 deleted): {SECOND}"
    )
    return first, second


@pytest.mark.parametrize("era", ERAS)
async def test_the_person_accepts_and_the_files_are_put_back(era, root, state_dir):
    seen: list = []
    elicit = answering("accept", "undo", seen)
    async with connect(root, state_dir, mode=era, elicit=elicit) as client:
        _first, second = await two_calls(client)
        assert tree(root) == AFTER_BOTH
        done = await client.call_tool("undo", {"call": second})
        sid = await session_id(client)
    assert not done.is_error, text(done)
    assert text(done) == (
        f"undid call {second}: 2 created removed, 1 modified put back, 1 deleted restored"
    )
    assert done.structured_content["kind"] == "undo"
    assert tree(root) == AFTER_FIRST
    [question] = seen
    assert question.message.startswith(f"stockade: the agent asks to undo call {second}")
    assert f"call {second}: bash: {SECOND}" in question.message
    assert "it 2 created, 1 modified, 1 deleted" in question.message
    assert question.requested_schema["properties"]["decision"]["enum"] == ["undo", "keep"]
    assert question.requested_schema["properties"]["decision"]["default"] == "keep"
    [undone] = of_type(events(state_dir, sid), "files/undone")
    assert undone["call"] == second


ANSWERS = {
    "decline": ("decline", None, "not done: the person declined the undo"),
    "keep": ("accept", "keep", "not done: the person chose to keep the workspace as it is"),
    "dismiss": ("cancel", None, "not done: the person dismissed the undo question"),
}


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("answer", ANSWERS)
async def test_the_person_declines_and_nothing_changes(era, answer, root, state_dir):
    action, decision, said = ANSWERS[answer]
    seen: list = []
    async with connect(root, state_dir, mode=era, elicit=answering(action, decision, seen)) as c:
        _first, second = await two_calls(c)
        refused = await c.call_tool("undo", {"call": second})
        sid = await session_id(c)
    assert refused.is_error and text(refused).startswith(said)
    assert len(seen) == 1
    assert tree(root) == AFTER_BOTH
    assert of_type(events(state_dir, sid), "files/undone") == []


@pytest.mark.parametrize("era", ERAS)
async def test_a_restore_is_asked_too(era, root, state_dir):
    seen: list = []
    async with connect(root, state_dir, mode=era, elicit=answering("accept", "restore", seen)) as c:
        first, second = await two_calls(c)
        done = await c.call_tool("undo", {"to": first})
        sid = await session_id(c)
    assert not done.is_error, text(done)
    assert text(done).startswith(f"restored to before seq {first}: ")
    assert tree(root) == {}
    [question] = seen
    assert f"restore the workspace to before seq {first}" in question.message
    assert f"call {first}: bash: {FIRST}" in question.message
    assert f"call {second}: bash: {SECOND}" in question.message
    [restored] = of_type(events(state_dir, sid), "files/restored")
    assert restored["before"] == first


@pytest.mark.parametrize("era", ERAS)
async def test_a_client_that_cannot_ask_is_refused_with_the_persons_command(era, root, state_dir):
    async with connect(root, state_dir, mode=era) as client:
        _first, second = await two_calls(client)
        refused = await client.call_tool("undo", {"call": second})
        sid = await session_id(client)
    assert refused.is_error
    assert text(refused) == (
        "not done: undo is the person's, and this MCP client cannot ask them; the person "
        f"can run `stockade session undo {sid} --call {second}` once this session is closed"
    )
    assert "\n" not in text(refused)
    assert tree(root) == AFTER_BOTH


def composition(directory: Path, *, model_may_undo: bool) -> Path:
    path = directory / "stockade.yml"
    path.write_text(
        f"""
- id: sandbox
  name: stockade.sandbox.local
- id: bash
  name: stockade.bash.sandbox
  config:
    mode: workspace-write
    workspace_root: !cwd
- id: approval
  name: stockade.approval.user
- id: permission
  name: stockade.permission.presets
- id: log
  name: stockade.session.log
- id: fs
  name: stockade.fs.sandbox
- id: mcp
  name: stockade.mcp
  config:
    model_may_undo: {"true" if model_may_undo else "false"}
"""
    )
    return path


@pytest.mark.parametrize("era", ERAS)
async def test_model_may_undo_undoes_without_a_question(era, root, outside, state_dir):
    seen: list = []
    config = composition(outside, model_may_undo=True)
    elicit = answering("decline", None, seen)
    async with connect(root, state_dir, "--config", str(config), mode=era, elicit=elicit) as c:
        _first, second = await two_calls(c)
        done = await c.call_tool("undo", {"call": second})
    assert not done.is_error, text(done)
    assert seen == []
    assert tree(root) == AFTER_FIRST


async def test_model_may_undo_false_still_asks(root, outside, state_dir):
    seen: list = []
    config = composition(outside, model_may_undo=False)
    elicit = answering("decline", None, seen)
    async with connect(root, state_dir, "--config", str(config), elicit=elicit) as client:
        _first, second = await two_calls(client)
        refused = await client.call_tool("undo", {"call": second})
    assert refused.is_error and len(seen) == 1
    assert tree(root) == AFTER_BOTH


async def test_refusals_are_one_line_and_touch_nothing(root, state_dir):
    seen: list = []
    async with connect(root, state_dir, elicit=answering("accept", "undo", seen)) as client:
        first, second = await two_calls(client)
        both = await client.call_tool("undo", {"call": first, "to": first})
        unknown = await client.call_tool("undo", {"call": 999})
        conflicted = await client.call_tool("undo", {"call": first})
    assert both.is_error and text(both) == (
        "undo takes `call` or `to`, not both: one undo or one restore"
    )
    assert unknown.is_error and text(unknown).startswith("call 999 changed no file")
    # Asked, accepted, and still refused: a later call changed the same files.
    assert conflicted.is_error and "\n" not in text(conflicted)
    assert text(conflicted).startswith(f"cannot undo call {first}: ")
    assert text(conflicted).endswith(f"in the way: seq {second}")
    assert conflicted.structured_content["conflicting_calls"] == [second]
    assert len(seen) == 1
    assert tree(root) == AFTER_BOTH
