"""Command rules through `stockade mcp`, driven by the MCP SDK's client over stdio in
both protocol eras: a `prompt` rule is asked through elicitation before anything runs,
"allow for this session" answers the next match unasked and not in the next session,
and a `forbid` rule runs nothing and names itself. Rules come from the composition
(`--config`, the bash entry's `rules:`); judged on the host's files and the logs."""

from __future__ import annotations

import json
from pathlib import Path

import mcp_types as types
import pytest

from ..support import RM_FORBIDDEN, TOUCH_PROMPT
from .support import ERAS, connect, events, of_type, session_id, text

pytestmark = pytest.mark.kernel

SESSION = "allow `touch made` and commands beginning with it for the rest of this session"


@pytest.fixture
def config(scratch) -> str:
    """The composition the server loads: the bash entry carries the two rules."""
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


def choosing(answers: list[str], seen: list):
    """An elicitation callback that accepts with the next answer: a choice's value, or
    `session` for whichever offered choice is the session's."""

    async def callback(context, params) -> types.ElicitResult:
        seen.append(params)
        answer = answers.pop(0)
        if answer == "session":
            choices = params.requested_schema["properties"]["decision"]["enum"]
            (answer,) = [c for c in choices if c.endswith("for the rest of this session")]
        return types.ElicitResult(action="accept", content={"decision": answer})

    return callback


@pytest.mark.parametrize("era", ERAS)
async def test_a_prompt_rule_is_asked_through_elicitation_and_allowed_for_the_session(
    era, root, state_dir, config
):
    seen: list = []
    (root / "keep").write_text("x")
    elicit = choosing(["session", "reject"], seen)
    async with connect(root, state_dir, "--config", config, mode=era, elicit=elicit) as client:
        first = await client.call_tool("bash", {"command": "touch made"})
        again = await client.call_tool("bash", {"command": "touch made second"})
        forbidden = await client.call_tool("bash", {"command": "rm -f keep"})
        sid = await session_id(client)
    assert len(seen) == 1
    [question] = seen
    # Asked with the command, the rule, its reason, and the session choice's words.
    lines = question.message.split("\n")
    assert "  command:   touch made" in lines
    assert "  rule:      ask-touch" in lines
    assert "  reason:    this project makes no empty files unasked" in lines
    assert "  mode:      workspace-write (unchanged: nothing widens)" in lines
    assert question.requested_schema["properties"]["decision"]["enum"] == [
        "approve once",
        SESSION,
        "reject",
    ]
    assert not first.is_error and first.structured_content["answered_by"] == "mcp-elicitation"
    assert not again.is_error and again.structured_content["answered_by"] == "session"
    assert (root / "made").exists() and (root / "second").exists()
    # Forbidden: nothing ran, and the result names the rule and its reason.
    assert forbidden.is_error and (root / "keep").exists()
    assert "FORBIDDEN by the command rule 'no-rm'" in text(forbidden)
    assert "files here are removed by the person only" in text(forbidden)
    assert forbidden.structured_content["rule"] == "no-rm"
    log = events(state_dir, sid)
    [asked] = of_type(log, "approval/asked")
    [answered] = of_type(log, "approval/answered")
    [allowed] = of_type(log, "rules/session-allow")
    assert asked["rule"] == "ask-touch" and asked["session_prefix"] == ["touch", "made"]
    assert answered["decision"] == "allowed-for-session"
    assert answered["answerer"] == "mcp-elicitation"
    assert allowed["prefix"] == ["touch", "made"]

    # The next session (a new server process) asks again: the answer died with the first.
    async with connect(root, state_dir, "--config", config, mode=era, elicit=elicit) as client:
        refused = await client.call_tool("bash", {"command": "touch made third"})
        other = await session_id(client)
    assert len(seen) == 2 and other != sid
    assert refused.is_error and refused.structured_content["rule_outcome"] == "rejected"
    assert not (root / "third").exists()
    assert of_type(events(state_dir, other), "rules/session-allow") == []
