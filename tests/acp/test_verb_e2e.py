"""`stockade acp` as a person starts it from an editor: the verb, the explicit `shell`
model, and what the agent says when no model is configured (issue 22, item 5).

Each runs the agent in its own process through the ACP SDK's client."""

from __future__ import annotations

import sys
from contextlib import asynccontextmanager

import acp
from stockade.acp.main import NO_MODEL

from ..support import require_backend
from .support import REPO, ScriptedClient, agent_env, run


@asynccontextmanager
async def stockade_acp(client, state_dir, *args):
    command = [sys.executable, "-m", "stockade", "acp", *args]
    async with acp.spawn_agent_process(
        client,
        command[0],
        *command[1:],
        env=agent_env(state_dir),
        cwd=str(REPO),
        transport_kwargs={"shutdown_timeout": 10.0},
    ) as (conn, process):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        yield conn, process


def test_the_shell_model_runs_a_prompt_as_a_command_and_asks_in_the_editor(
    state_dir_outside, tmp_path
):
    require_backend("bwrap")
    workspace = tmp_path / "project"
    workspace.mkdir()
    client = ScriptedClient(["allow-once"])

    async def scenario():
        async with stockade_acp(
            client, state_dir_outside, "--model", "shell", "--mode", "read-only"
        ) as (conn, _):
            session = await conn.new_session(cwd=str(workspace))
            await conn.prompt(
                session_id=session.session_id, prompt=[acp.text_block("echo hello > hello.txt")]
            )
            return session.session_id

    run(scenario())
    assert (workspace / "hello.txt").read_text() == "hello\n"  # the granted retry
    assert len(client.asked) == 1
    assert client.asked[0].tool_call.raw_input["command"] == "echo hello > hello.txt"


def test_without_a_model_each_prompt_is_answered_with_what_to_configure(
    state_dir_outside, tmp_path
):
    workspace = tmp_path / "project"
    workspace.mkdir()
    client = ScriptedClient()

    async def scenario():
        async with stockade_acp(client, state_dir_outside, "--mode", "workspace-write") as (
            conn,
            _,
        ):
            session = await conn.new_session(cwd=str(workspace))
            await conn.prompt(
                session_id=session.session_id,
                prompt=[acp.text_block("Please: touch ran.txt")],
            )
            return session.session_id

    sid = run(scenario())
    assert client.replies(sid) == [NO_MODEL]
    assert not (workspace / "ran.txt").exists()  # the English prompt ran as nothing
    assert client.asked == []


def test_the_shell_models_reply_says_the_prompt_ran_as_a_command(state_dir_outside, tmp_path):
    """`--model shell` scripts nothing: its reply says the prompt ran as a bash
    command, never "(scripted)" (issue 38, item 5)."""
    require_backend("bwrap")
    workspace = tmp_path / "project"
    workspace.mkdir()
    client = ScriptedClient()

    async def scenario():
        async with stockade_acp(
            client, state_dir_outside, "--model", "shell", "--mode", "workspace-write"
        ) as (conn, _):
            session = await conn.new_session(cwd=str(workspace))
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("echo hi")])
            return session.session_id

    sid = run(scenario())
    [reply] = client.replies(sid)
    assert reply.startswith("(shell) the prompt ran as a bash command; its result:\nhi"), reply
    assert "scripted" not in reply
