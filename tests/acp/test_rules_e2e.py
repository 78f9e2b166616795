"""Command rules through the ACP agent, driven by the ACP SDK's client over stdio: a
`prompt` rule is asked on the permission card before anything runs, its `allow_always`
option is "allow for this session" (the next match runs unasked, a new session asks
again), and a `forbid` rule runs nothing and names itself. The rules come from the
composition (`--config`, the bash entry's `rules:`); judged on the workspace's files
and the session logs. Real sandbox, real processes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("acp")

import acp

from ..support import RM_FORBIDDEN, TOUCH_PROMPT
from .support import ScriptedClient, agent, log_events, of_type, run

pytestmark = pytest.mark.kernel

SESSION = "Allow `touch made` and commands beginning with it for the rest of this session"


@pytest.fixture
def workspace(scratch) -> Path:
    path = Path(scratch) / "project"
    path.mkdir()
    return path


@pytest.fixture
def config(scratch) -> str:
    directory = Path(scratch) / "config"
    directory.mkdir()
    path = directory / "stockade.yml"
    rules = json.dumps([TOUCH_PROMPT, RM_FORBIDDEN])
    path.write_text(
        "- {id: sandbox, name: stockade.sandbox.local}\n"
        f"- {{id: bash, name: stockade.bash.sandbox, config: {{rules: {rules}}}}}\n"
        "- {id: approval, name: stockade.approval.user}\n"
        "- {id: log, name: stockade.session.log}\n"
    )
    return str(path)


def test_a_prompt_rule_on_the_permission_card_allowed_for_the_session(
    workspace, config, state_dir_outside, tmp_path
):
    (workspace / "keep").write_text("x")
    client = ScriptedClient(["allow-session", "reject"])

    async def scenario() -> tuple[str, str]:
        async with agent(
            client,
            state_dir_outside,
            "--config",
            config,
            "--model",
            "shell",
            stderr_path=tmp_path / "agent.stderr",
        ) as (conn, _process):
            first = (await conn.new_session(cwd=str(workspace))).session_id
            for command in ("touch made", "touch made second", "rm -f keep"):
                await conn.prompt(session_id=first, prompt=[acp.text_block(command)])
            other = (await conn.new_session(cwd=str(workspace))).session_id
            await conn.prompt(session_id=other, prompt=[acp.text_block("touch made third")])
            return first, other

    first, other = run(scenario())

    # On disk: the allowed command and the next match ran; the forbidden one and the
    # new session's (rejected) did not.
    assert (workspace / "made").exists() and (workspace / "second").exists()
    assert (workspace / "keep").exists() and not (workspace / "third").exists()

    # The card: twice in all (the first command, then the new session's), never for
    # the second match.
    assert [question.session_id for question in client.asked] == [first, other]
    card = client.asked[0]
    assert [(o.option_id, o.kind, o.name) for o in card.options] == [
        ("allow-once", "allow_once", "Allow once"),
        ("allow-session", "allow_always", SESSION),
        ("reject", "reject_once", "Reject"),
    ]
    assert card.tool_call.raw_input["rule"] == "ask-touch"
    assert card.tool_call.raw_input["sessionPrefix"] == ["touch", "made"]
    shown = card.tool_call.content[0].content.text
    assert "  command:   touch made" in shown and "  rule:      ask-touch" in shown
    assert "  reason:    this project makes no empty files unasked" in shown
    assert "workspace-write (unchanged: nothing widens)" in shown

    # The forbidden command's result names its rule and reason.
    results = client.tool_results(first)
    assert any(
        "FORBIDDEN by the command rule 'no-rm'" in result
        and "files here are removed by the person only" in result
        for result in results
    ), results

    # The logs: the first session's answer is a session rule in its log only.
    events = log_events(state_dir_outside, first)
    (answered,) = of_type(events, "approval/answered")
    assert (answered["decision"], answered["answerer"]) == ("allowed-for-session", "acp")
    (allowed,) = of_type(events, "rules/session-allow")
    assert allowed["prefix"] == ["touch", "made"] and allowed["rule"] == "ask-touch"
    # allow_always here never switched the session's mode.
    assert of_type(events, "sandbox/mode", "permission/preset") == []
    events = log_events(state_dir_outside, other)
    assert [a["decision"] for a in of_type(events, "approval/answered")] == ["rejected"]
    assert of_type(events, "rules/session-allow") == []
