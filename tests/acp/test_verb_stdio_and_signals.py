"""`stockade acp` started as people do start it: stdin from /dev/null or a file, stdout
to a file, and stopped with Ctrl-C (issue 38, item 2). No traceback reaches them:
the agent works with any stdio, and a signal stops it as the end of input would,
exiting 130 as `stockade mcp` does.

The Ctrl-C case runs the agent in its own process under the ACP SDK's client."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid

import acp

from ..support import pids_with_marker, require_backend
from .support import REPO, ScriptedClient, agent_env, run

SERVING = (
    "stockade acp: serving ACP on stdio; model: shell (each prompt runs as one bash command)\n"
)


def stockade_acp(state_dir, workspace, *, stdin, stdout):
    return subprocess.run(
        [sys.executable, "-m", "stockade", "acp", "--model", "shell"],
        stdin=stdin,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **agent_env(state_dir)},
        cwd=str(workspace),
        timeout=120,
        check=False,
    )


def test_stdin_from_dev_null_is_an_empty_conversation(state_dir_outside, tmp_path):
    with open("/dev/null", "rb") as null:
        result = stockade_acp(state_dir_outside, tmp_path, stdin=null, stdout=subprocess.PIPE)
    assert result.returncode == 0, result.stderr
    assert result.stderr == SERVING
    assert result.stdout == ""


def test_frames_from_a_file_are_answered_into_a_file(state_dir_outside, tmp_path):
    requests = tmp_path / "requests.jsonl"
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": acp.PROTOCOL_VERSION, "clientCapabilities": {}},
    }
    requests.write_text(json.dumps(initialize) + "\n", encoding="utf-8")
    replies = tmp_path / "replies.jsonl"
    with open(requests, "rb") as stdin, open(replies, "wb") as stdout:
        result = stockade_acp(state_dir_outside, tmp_path, stdin=stdin, stdout=stdout)
    assert result.returncode == 0, result.stderr
    assert result.stderr == SERVING
    [reply] = [json.loads(line) for line in replies.read_text(encoding="utf-8").splitlines()]
    assert reply["id"] == 1
    assert reply["result"]["protocolVersion"] == acp.PROTOCOL_VERSION


def test_ctrl_c_stops_the_agent_kills_its_command_and_exits_130(state_dir_outside, tmp_path):
    require_backend("bwrap")
    marker = f"acp-sigint-{uuid.uuid4().hex[:8]}"
    stderr_path = tmp_path / "stderr.txt"
    workspace = tmp_path / "project"
    workspace.mkdir()

    async def scenario():
        command = [sys.executable, "-m", "stockade", "acp", "--model", "shell"]
        with open(stderr_path, "wb") as stderr:  # noqa: ASYNC230 - a local file
            async with acp.spawn_agent_process(
                ScriptedClient(),
                command[0],
                *command[1:],
                "--mode",
                "workspace-write",
                env=agent_env(state_dir_outside),
                cwd=str(REPO),
                transport_kwargs={"stderr": stderr, "shutdown_timeout": 10.0},
            ) as (conn, process):
                await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
                session = await conn.new_session(cwd=str(workspace))
                prompt = asyncio.ensure_future(
                    conn.prompt(
                        session_id=session.session_id,
                        prompt=[acp.text_block(f"sleep 300; echo {marker}")],
                    )
                )
                for _ in range(600):
                    if pids_with_marker(marker):
                        break
                    await asyncio.sleep(0.1)
                assert pids_with_marker(marker), "the command never started"
                process.send_signal(signal.SIGINT)
                status = await asyncio.wait_for(process.wait(), 60)
                await asyncio.gather(prompt, return_exceptions=True)
                return status

    status = run(scenario())
    said = stderr_path.read_text(encoding="utf-8")
    assert status == 130, said
    assert said == SERVING + "stockade acp: SIGINT: stopping\n"
    assert pids_with_marker(marker) == []  # the running command went with it
