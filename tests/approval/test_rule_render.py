"""A command rule's prompt as each face renders it (pure): the command, the rule and its
reason, that nothing widens, and "allow for this session" in the exact words it would
allow, offered only where the request carries them; the answers each face reads."""

from __future__ import annotations

import msgspec
import pytest

from stockade.acp.permission import ALLOW_SESSION, outcome, permission_params
from stockade.approval import ApprovalRequest, Decision, render
from stockade.approval.answerers import terminal_decision
from stockade.mcp._ask import Shown, ask_message, ask_schema, decide
from stockade.vocab import ApprovalPolicy, SandboxMode

SESSION = (
    "allow `git push -f origin main` and commands beginning with it for the rest of this session"
)


def rule_request(**changes: object) -> ApprovalRequest:
    request = ApprovalRequest(
        session_id="s1",
        command="git push -f origin main",
        justification="the command rule 'force-push' asks a person before it runs",
        current_mode=SandboxMode.WORKSPACE_WRITE,
        requested_mode=SandboxMode.WORKSPACE_WRITE,
        policy=ApprovalPolicy.ASK,
        reason="a force push rewrites history others may have fetched",
        call_id="call-1",
        rule="force-push",
        rule_reason="a force push rewrites history others may have fetched",
        session_prefix=("git", "push", "-f", "origin", "main"),
    )
    return msgspec.structs.replace(request, **changes)


def test_the_terminal_shows_the_rule_and_the_session_choice_in_its_words():
    rows = render.render_prompt(rule_request()).split("\n")
    assert "  command:   git push -f origin main" in rows
    assert "  rule:      force-push" in rows
    assert "  reason:    a force push rewrites history others may have fetched" in rows
    assert "  mode:      workspace-write (unchanged: nothing widens)" in rows
    assert f"  s:         {SESSION}" in rows
    assert rows[-1] == "Allow this command? [y/s/N] "
    assert not any("why:" in row or "->" in row for row in rows)


def test_no_session_choice_where_the_request_carries_no_words():
    request = rule_request(session_prefix=())
    prompt = render.render_prompt(request)
    assert render.session_choice(request) is None
    assert "for the rest of this session" not in prompt
    assert prompt.endswith("Allow this command? [y/N] ")
    # Typing `s` where it was not offered allows nothing.
    assert terminal_decision(request, "s\n") is Decision.REJECTED


@pytest.mark.parametrize(
    ("typed", "decision"),
    [
        ("y\n", Decision.ALLOWED_ONCE),
        ("yes\n", Decision.ALLOWED_ONCE),
        ("s\n", Decision.ALLOWED_FOR_SESSION),
        ("Session\n", Decision.ALLOWED_FOR_SESSION),
        ("\n", Decision.REJECTED),
        ("n\n", Decision.REJECTED),
        ("sure\n", Decision.REJECTED),
    ],
)
def test_the_terminal_keys(typed, decision):
    assert terminal_decision(rule_request(), typed) is decision


def test_an_escalation_never_reads_s_as_the_session():
    escalation = rule_request(
        rule=None,
        rule_reason=None,
        session_prefix=(),
        requested_mode=SandboxMode.DANGER_FULL_ACCESS,
    )
    assert terminal_decision(escalation, "s\n") is Decision.REJECTED
    assert render.render_prompt(escalation).endswith("Allow this command once? [y/N] ")


def test_hidden_characters_in_the_session_words_are_escaped_and_warned():
    request = rule_request(
        command="git push -f $'\\x1b[2K' main", session_prefix=("git", "push", "-f", "\x1b[2K a")
    )
    prompt = render.render_prompt(request)
    assert "\x1b" not in prompt
    assert "allow `git push -f '\\x1b[2K a'` and commands beginning with it" in prompt
    assert "  warning:   the session prefix holds 1 control or invisible character" in prompt


def test_the_mcp_form_offers_the_session_choice_and_reads_it_back():
    request = rule_request()
    schema = ask_schema(request)
    assert schema["properties"]["decision"]["enum"] == ["approve once", SESSION, "reject"]
    assert schema["properties"]["decision"]["default"] == "reject"
    message = ask_message(request, Shown(cwd="/work"))
    assert "  rule:      force-push" in message.split("\n")
    assert f'"{SESSION}"' in message and "justification" not in message
    assert decide("accept", {"decision": SESSION}, request).decision is (
        Decision.ALLOWED_FOR_SESSION
    )
    assert decide("accept", {"decision": "approve once"}, request).decision is (
        Decision.ALLOWED_ONCE
    )
    # The session choice of another question, or none offered: no decision.
    other = rule_request(session_prefix=("git", "push"))
    assert decide("accept", {"decision": SESSION}, other).decision is Decision.CANCELLED
    bare = rule_request(session_prefix=())
    assert ask_schema(bare)["properties"]["decision"]["enum"] == ["approve once", "reject"]
    assert decide("accept", {"decision": SESSION}, bare).decision is Decision.CANCELLED
    # An escalation's form is as it was.
    assert ask_schema()["properties"]["decision"]["enum"] == ["approve once", "reject"]


def test_the_acp_card_offers_allow_always_as_the_session_choice():
    request = rule_request()
    params = permission_params(
        request, session_id="acp-1", tool_call_id="call-1", cwd="/work", allow_always=True
    )
    options = [(o["optionId"], o["kind"], o["name"]) for o in params["options"]]
    assert options == [
        ("allow-once", "allow_once", "Allow once"),
        (ALLOW_SESSION, "allow_always", SESSION[0].upper() + SESSION[1:]),
        ("reject", "reject_once", "Reject"),
    ]
    call = params["toolCall"]
    assert call["rawInput"]["rule"] == "force-push"
    assert call["rawInput"]["sessionPrefix"] == ["git", "push", "-f", "origin", "main"]
    text = call["content"][0]["content"]["text"]
    assert "  rule:      force-push" in text and "nothing widens" in text
    chosen = {"outcome": {"outcome": "selected", "optionId": ALLOW_SESSION}}
    assert outcome(chosen, params["options"]).decision is Decision.ALLOWED_FOR_SESSION
    assert not outcome(chosen, params["options"]).switch
    # No words, no session option (and no mode switch: nothing widens).
    bare = permission_params(
        rule_request(session_prefix=()),
        session_id="acp-1",
        tool_call_id="call-1",
        cwd=None,
        allow_always=True,
    )
    assert [o["optionId"] for o in bare["options"]] == ["allow-once", "reject"]
    assert outcome(chosen, bare["options"]).decision is Decision.UNAVAILABLE
