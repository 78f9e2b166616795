"""The agent's Trio core in-process: turns, cancellation, refusals (real harness, no SDK)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import trio

from stockade import open_harness
from stockade.acp.answerer import AcpAnswerer
from stockade.acp.core import AgentCore, ClientError
from stockade.acp.events import ACP_EVENTS
from stockade.acp.model import ScriptedModel
from stockade.acp.transcript import INTERRUPTED, chat_messages

from ..support import pids_with_marker

pytestmark = pytest.mark.kernel


def composition(state_dir: str, *, presets: bool = True) -> list[dict[str, Any]]:
    entries = [
        {"id": "sandbox", "name": "stockade.sandbox.local"},
        {"id": "bash", "name": "stockade.bash.sandbox", "config": {"mode": "workspace-write"}},
        {"id": "approval", "name": "stockade.approval.user"},
        {"id": "log", "name": "stockade.session.log", "config": {"state_dir": state_dir}},
    ]
    if presets:
        entries.append({"id": "permission", "name": "stockade.permission.presets"})
    return entries


class Updates:
    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any]]] = []
        self.started = trio.Event()

    async def __call__(self, session_id: str, update: dict[str, Any]) -> None:
        self.seen.append((session_id, update))
        if update["sessionUpdate"] == "tool_call":
            self.started.set()


async def test_a_cancel_stops_a_running_command_and_reports_the_call(scratch, state_dir_outside):
    marker = f"stockade-acp-cancel-{os.getpid()}"
    model = ScriptedModel.from_json(
        [
            [{"name": "bash", "arguments": {"command": f"sleep 30; echo {marker}"}}],
            [{"reply": "still here"}],
        ]
    )
    updates = Updates()
    async with open_harness(composition(state_dir_outside), extra_events=ACP_EVENTS) as harness:
        core = AgentCore(harness=harness, model=model, notify=updates)
        session = await core.new_session(scratch)
        sid = session["sessionId"]
        stops = []

        async def turn() -> None:
            stops.append(await core.prompt(sid, [{"type": "text", "text": "wait"}]))

        started = trio.current_time()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(turn)
            await updates.started.wait()
            # Cancel once the command runs (its call is in the log).
            while not any(e.tag == "tool/call" for e in await core.sessions[sid].agent.events()):
                await trio.sleep(0.01)
            await trio.sleep(0.2)
            with pytest.raises(ClientError, match="already running a prompt"):
                await core.prompt(sid, [{"type": "text", "text": "too"}])
            core.cancel(sid)
        assert stops == ["cancelled"]
        assert trio.current_time() - started < 20
        # The command is killed, not left running (the kill completes just after).
        with trio.move_on_after(5):
            while pids_with_marker(marker):
                await trio.sleep(0.05)
        assert pids_with_marker(marker) == []
        last = updates.seen[-1][1]
        assert (last["sessionUpdate"], last["status"]) == ("tool_call_update", "failed")
        assert last["content"][0]["content"]["text"] == INTERRUPTED
        # The history the model gets next is well formed, and the session serves on.
        messages = chat_messages(await core.sessions[sid].agent.events(), "S")
        assert messages[-1] == {
            "role": "tool",
            "tool_call_id": last["toolCallId"],
            "content": INTERRUPTED,
        }
        assert await core.prompt(sid, [{"type": "text", "text": "again"}]) == "end_turn"
        await core.close()


async def test_requests_the_core_cannot_serve_are_client_errors(scratch, state_dir_outside):
    async with open_harness(
        composition(state_dir_outside, presets=False), extra_events=ACP_EVENTS
    ) as harness:
        core = AgentCore(harness=harness, model=ScriptedModel())
        for cwd in ("relative/path", str(Path(scratch) / "missing")):
            with pytest.raises(ClientError):
                await core.new_session(cwd)
        session = await core.new_session(scratch)
        assert "modes" not in session
        with pytest.raises(ClientError, match="mounts no permission presets"):
            await core.set_mode(session["sessionId"], "workspace-write")
        with pytest.raises(ClientError, match="unknown session"):
            await core.prompt("20990101-000000-00000000", [])
        with pytest.raises(ClientError, match="no session"):
            await core.load_session("20990101-000000-00000000", scratch)
        with pytest.raises(ClientError):
            await core.load_session("../escape", scratch)
        other = Path(scratch) / "other"
        other.mkdir()
        with pytest.raises(ClientError, match="workspace root"):
            await core.load_session(session["sessionId"], str(other))
        core.cancel("not-a-session")  # a cancel for nothing is a no-op
        await core.close()


class SilentClient:
    """An editor that never answers."""

    def __init__(self) -> None:
        self.asked = trio.Event()

    async def request_permission(self, _params: dict[str, Any]) -> Any:
        self.asked.set()
        await trio.sleep_forever()


async def test_closing_ends_running_turns_and_audits_their_open_questions(
    scratch, state_dir_outside
):
    model = ScriptedModel.from_json(
        [
            [
                {"name": "bash", "arguments": {"command": "echo x > f"}},
                {"escalate": "workspace-write", "justification": "needed"},
            ]
        ]
    )
    client = SilentClient()
    answerer = AcpAnswerer(directory=lambda _sid: None, channel=client, timeout=None)
    entries = composition(state_dir_outside)
    entries[1]["config"]["mode"] = "read-only"
    async with open_harness(entries, answerers=[answerer], extra_events=ACP_EVENTS) as harness:
        core = AgentCore(harness=harness, model=model)
        answerer.directory = core.ask_context
        sid = (await core.new_session(scratch))["sessionId"]
        stops = []

        async def turn() -> None:
            stops.append(await core.prompt(sid, [{"type": "text", "text": "write"}]))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(turn)
            await client.asked.wait()
            await core.close()
        assert stops == ["cancelled"]
    log = Path(state_dir_outside, f"{sid}.jsonl").read_text().splitlines()
    answered = [e for e in map(json.loads, log) if e["type"] == "approval/answered"]
    assert [(a["decision"], a["detail"]) for a in answered] == [
        ("cancelled", "session/cancel while the question was open")
    ]
