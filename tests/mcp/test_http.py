"""`stockade mcp --http`: the streamable-HTTP app under Hypercorn's Trio worker, driven
by the SDK's own HTTP client. One stockade session per MCP session (connection)."""

from __future__ import annotations

import signal
import uuid

import pytest
import trio
from mcp.shared.exceptions import MCPError

from stockade import open_harness

from ..support import pids_with_marker, stockade
from .support import answering, events, http_server, of_type, read_status, text


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_http_serves_the_harness_tools_one_session_per_connection(
    era, root, state_dir, monkeypatch
):
    monkeypatch.setenv("STOCKADE_STATE_DIR", str(state_dir))
    async with open_harness(None, cwd=str(root)) as harness:
        expected = harness.tool_schemas()
    async with http_server(root, state_dir) as server:
        sessions = []
        for _ in range(2):
            async with server.client(mode=era) as client:
                # `auto` probes the 2026 era, is refused, and falls back to the handshake.
                assert client.protocol_version == "2025-11-25"
                listed = (await client.list_tools()).tools
                ran = await client.call_tool("bash", {"command": "pwd; echo hi > in.txt"})
                status = await read_status(client)
                instructions = client.session.initialize_result.instructions
                sessions.append(status["session_id"])
            # The harness's tools, then the person's undo (issue 42).
            assert [t.name for t in listed] == [*(s["name"] for s in expected), "undo"]
            assert [t.input_schema for t in listed[:-1]] == [s["parameters"] for s in expected]
            assert text(ran).startswith(f"{root}\n") and (root / "in.txt").exists()
            assert f"stockade session: {status['session_id']} " in instructions
    stderr, status, stdout = server.out
    assert status == 128 + signal.SIGTERM and stdout == b""  # stopped by SIGTERM
    assert len(set(sessions)) == 2
    for session in sessions:
        assert f"session {session} closed" in stderr


async def test_http_escalation_is_asked_through_elicitation(root, state_dir):
    seen: list = []
    async with http_server(root, state_dir, "--mode", "read-only") as server:
        elicit = answering("accept", "approve once", seen)
        async with server.client(elicitation_callback=elicit) as client:
            denied = await client.call_tool("bash", {"command": "echo x > out.txt"})
            granted = await client.call_tool(
                "bash",
                {
                    "command": "echo x > out.txt",
                    "sandbox_permissions": "workspace-write",
                    "justification": "write out.txt",
                },
            )
            sid = (await read_status(client))["session_id"]
    assert denied.structured_content["denied"] is True
    assert granted.structured_content["granted"] == "workspace-write"
    assert (root / "out.txt").read_text() == "x\n"
    assert "echo x > out.txt" in seen[0].message
    [answered] = of_type(events(state_dir, sid), "approval/answered")
    assert answered["decision"] == "allowed-once" and answered["answerer"] == "mcp-elicitation"


async def test_http_connection_end_kills_its_jobs(root, state_dir):
    marker = f"mcp-http-{uuid.uuid4().hex}"
    async with http_server(root, state_dir) as server:
        async with server.client() as client:
            await client.call_tool("bash", {"command": f"sleep 300 # {marker}", "background": True})
            with trio.fail_after(10):
                while not pids_with_marker(marker):
                    await trio.sleep(0.05)
            sid = (await read_status(client))["session_id"]
        # The client deleted its MCP session: the stockade session closes, jobs die.
        with trio.fail_after(10):
            while pids_with_marker(marker):
                await trio.sleep(0.05)
        # The server keeps serving other connections.
        async with server.client() as client:
            again = await client.call_tool("bash", {"command": "echo next"})
    assert text(again).startswith("next\n")
    assert of_type(events(state_dir, sid), "tool/result")


async def test_http_refuses_a_client_that_speaks_only_the_2026_era(root, state_dir):
    async with http_server(root, state_dir) as server:
        with pytest.raises((MCPError, BaseExceptionGroup)) as refused:
            async with server.client(mode="2026-07-28") as client:
                await client.list_tools()
    error = refused.value
    while isinstance(error, BaseExceptionGroup):
        [error] = error.exceptions
    assert isinstance(error, MCPError) and error.code == -32022


def test_http_usage_errors(root, state_dir):
    env = {"STOCKADE_STATE_DIR": str(state_dir)}
    remote = stockade("mcp", "--root", str(root), "--http", "0.0.0.0:0", env=env)
    assert remote.returncode == 2 and "--allow-remote" in remote.stderr
    resumed = stockade(
        "mcp", "--root", str(root), "--http", "127.0.0.1:0", "--session-id", "x", env=env
    )
    assert resumed.returncode == 2 and "--session-id" in resumed.stderr
    bad = stockade("mcp", "--root", str(root), "--http", "nowhere", env=env)
    assert bad.returncode == 2 and "HOST:PORT" in bad.stderr


def test_http_on_a_port_in_use_says_so_in_one_line(root, state_dir):
    """Another server holds the port: one line naming it and what to do, exit 1
    (ENVIRONMENT), no traceback, no token file left behind."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {"STOCKADE_STATE_DIR": str(state_dir)}
        result = stockade("mcp", "--root", str(root), "--http", f"127.0.0.1:{port}", env=env)
    assert result.returncode == 1, result.stderr
    assert result.stderr == (
        f"stockade: --http 127.0.0.1:{port}: the port is already in use (another server "
        "listens there); stop it, or pick another port (0 picks a free one)\n"
    )
    assert not list(state_dir.glob("mcp-token*")), list(state_dir.iterdir())


async def test_a_refused_request_is_logged_in_one_line_without_the_token(root, state_dir):
    """A 401 leaves one stderr line saying who asked and why it was refused; the token
    it sent appears nowhere (issue 38, item 5)."""
    wrong = "w" * 43
    async with http_server(root, state_dir) as server:
        token = server.token
        with pytest.raises(BaseException):  # noqa: B017 - the SDK's own error, wrapped
            async with server.client(token=wrong) as client:
                await client.list_tools()
    said = server.out[0]
    refused = [line for line in said.splitlines() if "(401)" in line]
    assert refused, said
    assert refused[0].startswith("stockade mcp: refused POST /mcp from 127.0.0.1:")
    assert refused[0].endswith("(401): a bearer token it does not hold")
    assert wrong not in said and token not in said
