"""The agent's stdio under a misbehaving client: raw frames, and the end of input."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import pytest

pytest.importorskip("acp")

import acp

from ..support import pids_with_marker
from .support import (
    REPO,
    SILENT,
    ScriptedClient,
    agent,
    agent_command,
    agent_env,
    log_events,
    of_type,
    run,
    write_script,
)

pytestmark = pytest.mark.kernel


async def _raw_agent(state_dir: str, *args: str) -> asyncio.subprocess.Process:
    command = agent_command(*args)
    return await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        cwd=str(REPO),
        env={**os.environ, **agent_env(state_dir)},
    )


async def _reply(process: asyncio.subprocess.Process) -> dict:
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), 60)
    assert line, "the agent closed its stdout"
    return json.loads(line)


def test_malformed_and_unexpected_messages_get_errors_and_the_agent_keeps_serving(
    scratch, state_dir_outside
):
    workspace = Path(scratch) / "project"
    workspace.mkdir()
    frames = [
        (b"this is not json\n", None, -32700),
        (b"[1, 2]\n", None, -32600),
        (b"42\n", None, -32600),
        (b'{"jsonrpc": "2.0"}\n', None, -32600),
        (b'{"id": 7, "method": "initialize"}\n', 7, -32600),
        (b'{"jsonrpc": "2.0", "id": 8, "method": 5}\n', 8, -32600),
        (b'{"jsonrpc": "2.0", "id": 9, "method": "initialize", "params": 3}\n', 9, -32600),
        (b'{"jsonrpc": "2.0", "id": 10, "method": "no/such/method", "params": {}}\n', 10, -32601),
        (
            b'{"jsonrpc": "2.0", "id": 11, "method": "session/new", "params": {"cwd": 4}}\n',
            11,
            -32602,
        ),
        (
            b'{"jsonrpc": "2.0", "id": 12, "method": "session/new", "params": {"cwd": "relative", "mcpServers": []}}\n',
            12,
            -32602,
        ),
        (
            b'{"jsonrpc": "2.0", "id": 13, "method": "session/prompt", "params": {"sessionId": "nope", "prompt": []}}\n',
            13,
            -32602,
        ),
        (
            b'{"jsonrpc": "2.0", "id": 14, "method": "session/set_mode", "params": {"sessionId": "nope", "modeId": "x"}}\n',
            14,
            -32602,
        ),
    ]

    async def scenario() -> tuple[list, dict, dict, int]:
        process = await _raw_agent(state_dir_outside)
        assert process.stdin is not None
        replies = []
        for frame, _id, _code in frames:
            process.stdin.write(frame)
            await process.stdin.drain()
            replies.append(await _reply(process))
        # A notification nobody knows, and a response to nothing: no answer to either.
        process.stdin.write(b'{"jsonrpc": "2.0", "method": "no/such/notification"}\n')
        process.stdin.write(b'{"jsonrpc": "2.0", "id": 99, "result": {}}\n')
        process.stdin.write(
            b'{"jsonrpc": "2.0", "id": 20, "method": "initialize", "params": {"protocolVersion": 1}}\n'
        )
        await process.stdin.drain()
        initialized = await _reply(process)
        new = {
            "jsonrpc": "2.0",
            "id": 21,
            "method": "session/new",
            "params": {"cwd": str(workspace), "mcpServers": []},
        }
        process.stdin.write(json.dumps(new).encode() + b"\n")
        await process.stdin.drain()
        created = await _reply(process)
        process.stdin.close()
        code = await asyncio.wait_for(process.wait(), 60)
        return replies, initialized, created, code

    replies, initialized, created, code = run(scenario())
    assert [(r["id"], r["error"]["code"]) for r in replies] == [(i, c) for _f, i, c in frames]
    assert all(r["jsonrpc"] == "2.0" for r in replies)
    assert initialized["id"] == 20 and initialized["result"]["agentCapabilities"]["loadSession"]
    assert created["id"] == 21 and created["result"]["sessionId"]
    assert code == 0


def test_end_of_input_leaves_no_process_behind(scratch, state_dir_outside):
    workspace = Path(scratch) / "project"
    workspace.mkdir()
    marker = f"stockade-acp-eof-{os.getpid()}"
    background = {
        "name": "bash",
        "arguments": {"command": f"sleep 300; echo {marker}", "background": True},
    }
    write = {"name": "bash", "arguments": {"command": "echo x > notes.txt"}}
    escalate = {"escalate": "workspace-write", "justification": "needed"}
    script = write_script(Path(scratch), [[background], [write, escalate]])
    client = ScriptedClient([SILENT])

    async def scenario() -> int | None:
        async with agent(client, state_dir_outside, "--mode", "read-only", "--script", script) as (
            conn,
            process,
        ):
            session = await conn.new_session(cwd=str(workspace))
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("start")])
            assert pids_with_marker(marker), "the background job did not start"
            # A turn waits on a question nobody answers; then the client goes away.
            turn = asyncio.ensure_future(
                conn.prompt(session_id=session.session_id, prompt=[acp.text_block("write")])
            )
            await asyncio.wait_for(client.question_open.wait(), 60)
            process.stdin.write_eof()
            code = await asyncio.wait_for(process.wait(), 60)
            turn.cancel()
            return code

    try:
        assert run(scenario()) == 0
        assert pids_with_marker(marker) == []
        assert not (workspace / "notes.txt").exists()
        # The question left open is still audited: asked, and answered by nobody's yes.
        (sid,) = client.updates
        answered = of_type(log_events(state_dir_outside, sid), "approval/answered")
        assert [a["decision"] for a in answered] in (["unavailable"], ["cancelled"])
    finally:
        for pid in pids_with_marker(marker):
            os.kill(pid, signal.SIGKILL)
