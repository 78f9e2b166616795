"""An ACP call's command gets no secret of the agent's environment (issue 24): `stockade
acp --model shell` as an editor starts it, secret-looking variables beside it. Judged
by what `env` printed, as the editor received it."""

from __future__ import annotations

import os
import sys

import acp

from .support import REPO, ScriptedClient, agent_env, run

SECRETS = {
    "AWS_SECRET_ACCESS_KEY": "acp-aws-secret",
    "GITHUB_TOKEN": "acp-github-token",
    "PGPASSWORD": "acp-pg-password",
    "STORE_DSN": "postgresql://u:acp-dsn-pw@h/db",
}


def test_an_acp_call_gets_none_of_the_agents_secrets(state_dir_outside, tmp_path):
    workspace = tmp_path / "project"
    workspace.mkdir()
    client = ScriptedClient()
    env = {
        **agent_env(state_dir_outside),
        **SECRETS,
        "PATH": os.environ["PATH"],
        "ENVTEST_ORDINARY": "kept",
    }

    async def scenario():
        command = [sys.executable, "-m", "stockade", "acp", "--model", "shell"]
        async with acp.spawn_agent_process(
            client,
            command[0],
            *command[1:],
            "--mode",
            "read-only",
            env=env,
            cwd=str(REPO),
            transport_kwargs={"shutdown_timeout": 10.0},
        ) as (conn, _process):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(workspace))
            await conn.prompt(
                session_id=session.session_id, prompt=[acp.text_block("env; echo done")]
            )
            return session.session_id

    sid = run(scenario())
    seen = "\n".join(client.tool_results(sid))
    assert "ENVTEST_ORDINARY=kept" in seen and "\ndone" in seen, seen
    for name, value in SECRETS.items():
        assert f"{name}=" not in seen and value not in seen, name


def test_a_chat_models_api_key_is_a_secret_of_the_agents_own():
    from stockade.acp.model import ChatCompletionsModel, ScriptedModel, model_secrets

    key = "sk-acp-model-key-0123456789"
    assert model_secrets(ChatCompletionsModel(api_key=key)) == (key,)
    assert model_secrets(ScriptedModel(description="shell")) == ()
