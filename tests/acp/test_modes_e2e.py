"""Session modes over ACP: the preset table as modes, `session/set_mode`, and
`session/load` after a restart, on the example agent as a subprocess."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("acp")

import acp

from .support import ScriptedClient, agent, log_events, of_type, run, write_script

pytestmark = pytest.mark.kernel

KNOB_EVENTS = ("permission/preset", "sandbox/mode", "approval/policy", "sandbox/network")


def _knob_events(state_dir: str, session_id: str) -> list[tuple[str, str]]:
    shown = []
    for event in of_type(log_events(state_dir, session_id), *KNOB_EVENTS):
        value = (
            event.get("name") or event.get("mode") or event.get("policy") or event.get("network")
        )
        shown.append((event["type"], value))
    return shown


@pytest.fixture
def workspace(scratch) -> Path:
    path = Path(scratch) / "project"
    path.mkdir()
    return path


def test_set_mode_selects_each_preset_writing_only_changed_knobs(
    workspace, scratch, state_dir_outside
):
    script = write_script(Path(scratch), [[{"reply": "policy"}]])
    client = ScriptedClient()

    async def scenario() -> tuple[str, list]:
        errors = []
        async with agent(client, state_dir_outside, "--mode", "read-only", "--script", script) as (
            conn,
            _process,
        ):
            session = await conn.new_session(cwd=str(workspace))
            sid = session.session_id
            # read-only + ask is in no preset: reported as `custom`.
            assert session.modes.current_mode_id == "custom"
            assert [m.id for m in session.modes.available_modes] == [
                "workspace-write",
                "danger-full-access",
                "custom",
            ]
            await conn.set_session_mode(session_id=sid, mode_id="workspace-write")
            await conn.set_session_mode(session_id=sid, mode_id="danger-full-access")
            await conn.set_session_mode(session_id=sid, mode_id="danger-full-access")  # no-op
            for unmatched in ("custom", "read-only", "nonsense"):
                with pytest.raises(acp.RequestError) as caught:
                    await conn.set_session_mode(session_id=sid, mode_id=unmatched)
                errors.append((caught.value.code, caught.value.data["details"]))
            await conn.set_session_mode(session_id=sid, mode_id="workspace-write")
            # The policy-context message is what the model sees at its next step.
            await conn.prompt(session_id=sid, prompt=[acp.text_block("what is my policy?")])
            return sid, errors

    sid, errors = run(scenario())
    assert _knob_events(state_dir_outside, sid) == [
        ("permission/preset", "workspace-write"),
        ("sandbox/mode", "workspace-write"),
        ("permission/preset", "danger-full-access"),
        ("sandbox/mode", "danger-full-access"),
        ("approval/policy", "never"),
        ("permission/preset", "workspace-write"),
        ("sandbox/mode", "workspace-write"),
        ("approval/policy", "ask"),
    ]
    assert [code for code, _ in errors] == [-32602] * 3
    assert "cannot be selected" in errors[0][1]
    assert "unknown session mode 'read-only'" in errors[1][1]
    (reply,) = client.replies(sid)
    assert "Sandbox mode: workspace-write" in reply
    assert "Approval policy: ask" in reply
    (context,) = of_type(log_events(state_dir_outside, sid), "context/policy")
    assert context["sandbox_mode"] == "workspace-write"
    assert context["text"] in reply


def test_load_after_a_restart_restores_modes_and_the_conversation(
    workspace, scratch, state_dir_outside
):
    notes = workspace / "notes.txt"
    write = {"name": "bash", "arguments": {"command": "echo hello >> notes.txt"}}
    script = write_script(Path(scratch), [[write], [write]])

    async def first_run() -> str:
        async with agent(
            ScriptedClient(), state_dir_outside, "--mode", "read-only", "--script", script
        ) as (conn, _process):
            session = await conn.new_session(cwd=str(workspace))
            await conn.set_session_mode(session_id=session.session_id, mode_id="workspace-write")
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("first")])
            return session.session_id

    sid = run(first_run())
    assert notes.read_text() == "hello\n"
    client = ScriptedClient()

    async def second_run() -> str:
        async with agent(client, state_dir_outside, "--mode", "read-only", "--script", script) as (
            conn,
            _process,
        ):
            loaded = await conn.load_session(session_id=sid, cwd=str(workspace))
            await conn.prompt(session_id=sid, prompt=[acp.text_block("second")])
            with pytest.raises(acp.RequestError):
                await conn.load_session(session_id="20990101-000000-00000000", cwd=str(workspace))
            return loaded.modes.current_mode_id

    assert run(second_run()) == "workspace-write"
    # The restored mode ran the second write, although the deployment default is read-only.
    assert notes.read_text() == "hello\nhello\n"
    replayed = [u.session_update for u in client.updates[sid]]
    assert replayed[:4] == [
        "user_message_chunk",
        "tool_call",
        "tool_call_update",
        "agent_message_chunk",
    ]
    assert client.updates[sid][0].content.text == "first"
    # One policy message: the resumed session's state was what the model was last told.
    assert len(of_type(log_events(state_dir_outside, sid), "context/policy")) == 1


def test_automation_composition_has_no_modes(workspace, scratch, state_dir_outside):
    async def scenario() -> tuple[object, int]:
        async with agent(
            ScriptedClient(),
            state_dir_outside,
            "--composition",
            "automation",
            "--mode",
            "read-only",
        ) as (conn, _process):
            session = await conn.new_session(cwd=str(workspace))
            with pytest.raises(acp.RequestError) as caught:
                await conn.set_session_mode(
                    session_id=session.session_id, mode_id="workspace-write"
                )
            return session.modes, caught.value.code

    modes, code = run(scenario())
    assert modes is None
    assert code == -32602
