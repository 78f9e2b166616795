"""The note's end-to-end test, keyless: the example agent as a subprocess in read-only
mode, driven by the SDK's client over stdio, escalations answered in the "editor".

Judged on disk (what the workspace holds) and in the session log (what was asked,
who answered, what the model was shown). Real sandbox, real processes, real clock.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("acp")

import acp
from stockade.vocab import SandboxMode, denial_marker, rejection_text

from .support import (
    CANCELLED,
    SESSION_CANCEL,
    SILENT,
    ScriptedClient,
    agent,
    log_events,
    of_type,
    run,
    write_script,
)

pytestmark = pytest.mark.kernel

DENIED = denial_marker(SandboxMode.READ_ONLY)
REJECTED = rejection_text(SandboxMode.WORKSPACE_WRITE)


def _write(line: str) -> dict:
    return {"name": "bash", "arguments": {"command": f"printf '{line}\\n' >> notes.txt"}}


ESCALATE = {"escalate": "workspace-write", "justification": "the user asked for this note"}


@pytest.fixture
def workspace(scratch) -> Path:
    path = Path(scratch) / "project"
    path.mkdir()
    return path


@pytest.fixture
def scripts(scratch) -> Path:
    path = Path(scratch) / "scripts"
    path.mkdir()
    return path


def test_escalation_allow_once_reject_and_cancel(workspace, scripts, state_dir_outside, tmp_path):
    notes = workspace / "notes.txt"
    script = write_script(
        scripts,
        [
            [_write("one"), ESCALATE],  # allowed once
            [_write("two")],  # the next write is denied again
            [_write("three"), ESCALATE],  # rejected
            [_write("four"), ESCALATE],  # the client answers `cancelled`
            [_write("five"), ESCALATE],  # session/cancel while the question is open
            [_write("six")],  # the session still serves after a cancelled turn
        ],
    )
    client = ScriptedClient(["allow-once", "reject", CANCELLED, SESSION_CANCEL])

    async def scenario() -> dict:
        async with agent(
            client,
            state_dir_outside,
            "--mode",
            "read-only",
            "--script",
            script,
            stderr_path=tmp_path / "agent.stderr",
        ) as (conn, _process):
            session = await conn.new_session(cwd=str(workspace))
            sid = session.session_id
            stops = []
            contents = []
            for text in ("one", "two", "three", "four", "five", "six"):
                response = await conn.prompt(
                    session_id=sid, prompt=[acp.text_block(f"write {text}")]
                )
                stops.append(response.stop_reason)
                contents.append(notes.read_text() if notes.exists() else "")
            return {"sid": sid, "stops": stops, "contents": contents}

    outcome = run(scenario())
    sid = outcome["sid"]

    # On disk: the one approved retry wrote once; nothing else ever did.
    assert outcome["contents"] == ["one\n"] * 6
    assert outcome["stops"] == ["end_turn"] * 4 + ["cancelled", "end_turn"]

    # What the person was asked: the exact command, its cwd, the denied and the requested mode.
    assert len(client.asked) == 4
    first = client.asked[0]
    assert first.session_id == sid
    assert first.tool_call.kind == "execute"
    assert first.tool_call.raw_input["command"] == "printf 'one\\n' >> notes.txt"
    assert first.tool_call.raw_input["cwd"] == str(workspace)
    assert first.tool_call.raw_input["deniedMode"] == "read-only"
    assert first.tool_call.raw_input["requestedMode"] == "workspace-write"
    assert "printf 'one\\n' >> notes.txt" in first.tool_call.content[0].content.text
    assert [(o.option_id, o.kind) for o in first.options] == [
        ("allow-once", "allow_once"),
        ("reject", "reject_once"),
    ]
    # The question names the tool call the editor was shown streaming.
    streamed = [u.tool_call_id for u in client.updates[sid] if u.session_update == "tool_call"]
    assert first.tool_call.tool_call_id in streamed

    # What the model was shown: the denial, the grant, the rejection text, the cancel.
    replies = client.replies(sid)
    assert 'escalation granted once: this call ran under "workspace-write"' in replies[0]
    assert DENIED in replies[1]
    assert REJECTED in replies[2]
    assert "cancelled before the user decided" in replies[3]
    assert DENIED in replies[4]

    # The session log: every ask audited with its answerer and outcome.
    events = log_events(state_dir_outside, sid)
    answered = of_type(events, "approval/answered")
    assert [(a["decision"], a["answerer"]) for a in answered] == [
        ("allowed-once", "acp"),
        ("rejected", "acp"),
        ("cancelled", "acp"),
        ("cancelled", "acp"),
    ]
    assert answered[3]["detail"] == "session/cancel while the question was open"
    # No grant was persisted: the session never left read-only.
    assert of_type(events, "sandbox/mode", "permission/preset") == []
    results = of_type(events, "tool/result")
    granted = [r for r in results if r["facts"].get("granted")]
    assert [r["facts"]["command"] for r in granted] == ["printf 'one\\n' >> notes.txt"]
    # The model's rejection text is in the log as the tool result it was shown.
    assert any(REJECTED in r["text"] for r in results)
    prompts = of_type(events, "acp/prompt")
    assert [p["text"] for p in prompts] == [
        f"write {t}" for t in ("one", "two", "three", "four", "five", "six")
    ]


def test_allow_always_switches_the_session_through_its_presets(
    workspace, scripts, state_dir_outside
):
    notes = workspace / "notes.txt"
    script = write_script(scripts, [[_write("one"), ESCALATE], [_write("two")]])
    client = ScriptedClient(["switch-session"])

    async def scenario() -> str:
        async with agent(
            client, state_dir_outside, "--mode", "read-only", "--allow-always", "--script", script
        ) as (conn, _process):
            session = await conn.new_session(cwd=str(workspace))
            assert session.modes.current_mode_id == "custom"
            for text in ("one", "two"):
                await conn.prompt(session_id=session.session_id, prompt=[acp.text_block(text)])
            return session.session_id

    sid = run(scenario())
    # The switch let the retry run, and the session's next write needs no question.
    assert notes.read_text() == "one\ntwo\n"
    assert [o.kind for o in client.asked[0].options] == [
        "allow_once",
        "allow_always",
        "reject_once",
    ]
    assert len(client.asked) == 1
    modes = [
        u.current_mode_id for u in client.updates[sid] if u.session_update == "current_mode_update"
    ]
    assert modes == ["workspace-write"]
    # Recorded as the session's mode event through the presets, between the ask and its answer.
    events = log_events(state_dir_outside, sid)
    kinds = [
        e["type"]
        for e in events
        if e["type"].split("/")[0] in ("approval", "sandbox", "permission")
    ]
    assert kinds == ["approval/asked", "permission/preset", "sandbox/mode", "approval/answered"]
    answered = of_type(events, "approval/answered")[0]
    assert answered["decision"] == "allowed-once"
    assert answered["detail"] == "allow_always: selected preset 'workspace-write'"


def test_no_answer_in_time_is_unavailable(workspace, scripts, state_dir_outside):
    script = write_script(scripts, [[_write("one"), ESCALATE]])
    client = ScriptedClient([SILENT])

    async def scenario() -> str:
        async with agent(
            client,
            state_dir_outside,
            "--mode",
            "read-only",
            "--permission-timeout",
            "1",
            "--script",
            script,
        ) as (conn, _process):
            session = await conn.new_session(cwd=str(workspace))
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("one")])
            return session.session_id

    sid = run(scenario())
    assert not (workspace / "notes.txt").exists()
    answered = of_type(log_events(state_dir_outside, sid), "approval/answered")
    assert [(a["decision"], a["detail"]) for a in answered] == [
        ("unavailable", "no answer from the client within 1 s")
    ]
    assert 'escalating to "workspace-write" is unavailable' in client.replies(sid)[0]


def test_two_sessions_at_once_keep_their_own_roots(scratch, scripts, state_dir_outside):
    a, b = Path(scratch) / "project-a", Path(scratch) / "project-b"
    a.mkdir()
    b.mkdir()
    both = (
        'for d in project-a project-b; do echo "$(basename "$PWD")" > ../$d/from-$(basename "$PWD"); done; '
        "sleep 0.3"
    )
    script = write_script(scripts, [[{"name": "bash", "arguments": {"command": both}}]])
    client = ScriptedClient()

    async def scenario() -> tuple[str, str]:
        async with agent(client, state_dir_outside, "--mode", "read-only", "--script", script) as (
            conn,
            _process,
        ):
            first = await conn.new_session(cwd=str(a))
            second = await conn.new_session(cwd=str(b))
            for session in (first, second):
                await conn.set_session_mode(
                    session_id=session.session_id, mode_id="workspace-write"
                )
            await asyncio.gather(
                conn.prompt(session_id=first.session_id, prompt=[acp.text_block("go")]),
                conn.prompt(session_id=second.session_id, prompt=[acp.text_block("go")]),
            )
            # A switch in one session is not the other's.
            await conn.set_session_mode(session_id=first.session_id, mode_id="danger-full-access")
            return first.session_id, second.session_id

    first, second = run(scenario())
    # Each wrote under its own root and was denied in its neighbour's.
    assert (a / "from-project-a").read_text() == "project-a\n"
    assert (b / "from-project-b").read_text() == "project-b\n"
    assert not (b / "from-project-a").exists()
    assert not (a / "from-project-b").exists()
    for sid, root in ((first, a), (second, b)):
        events = log_events(state_dir_outside, sid)
        assert events[0]["cwd"] == str(root)
        (context,) = of_type(events, "context/policy")
        assert context["workspace_root"] == str(root)
        (result,) = of_type(events, "tool/result")
        assert result["facts"]["denied"] is True
        assert result["facts"]["mode"] == "workspace-write"
    presets = {
        sid: [e["name"] for e in of_type(log_events(state_dir_outside, sid), "permission/preset")]
        for sid in (first, second)
    }
    assert presets == {
        first: ["workspace-write", "danger-full-access"],
        second: ["workspace-write"],
    }
