"""A command rule's prompt on a real terminal: the harness's default answerer chain (the
terminal) asks before the command runs, shows the rule and what "allow for this
session" would allow, and that answer lets the next matching command run unasked in
that session only; a forbid rule asks nobody and runs nothing. Judged on the screen
(pyte), the host's files and the session logs."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from ..pty_screen import PtyChild
from ..support import RM_FORBIDDEN, TOUCH_PROMPT, require_backend

pytestmark = pytest.mark.kernel

PROMPT = "Allow this command? [y/s/N]"

# The child: a composition whose bash entry carries a prompt rule and whose approval
# entry keeps the default answerers (the terminal), four calls in two sessions.
HARNESS_CHILD = r"""
import json, sys
import trio
from stockade import open_harness

root, state_dir = sys.argv[1], sys.argv[2]
composition = [
    {"id": "sandbox", "name": "stockade.sandbox.local"},
    {"id": "bash", "name": "stockade.bash.sandbox", "config": {"rules": json.loads(sys.argv[3])}},
    {"id": "approval", "name": "stockade.approval.user"},
    {"id": "log", "name": "stockade.session.log", "config": {"state_dir": state_dir}},
]

async def main():
    async with open_harness(composition) as harness:
        first = await harness.open_session(cwd=root)
        for step, command in (("ONE", "touch made"), ("TWO", "touch made second")):
            result = await first.run_tool("bash", {"command": command})
            print(f"RESULT-{step}:", json.dumps([result.is_error, result.facts.get("answered_by")]))
        result = await first.run_tool("bash", {"command": "rm -f keep"})
        print("RESULT-FORBIDDEN:", json.dumps([result.is_error, result.facts.get("rule"), "FORBIDDEN by the command rule 'no-rm'" in result.text]))
        other = await harness.open_session(cwd=root)
        result = await other.run_tool("bash", {"command": "touch made third"})
        print("RESULT-THREE:", json.dumps([result.is_error, result.facts.get("rule_outcome")]))
        print("SESSIONS:", first.id, other.id)

trio.run(main)
"""


def log(state_dir: str, session_id: str) -> list[dict]:
    text = Path(state_dir, f"{session_id}.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def of_type(events: list[dict], tag: str) -> list[dict]:
    return [event for event in events if event["type"] == tag]


def test_a_prompt_rule_is_asked_on_the_terminal_and_allowed_for_the_session(
    scratch, state_dir_outside
):
    require_backend("bwrap")
    root = Path(scratch) / "project"
    root.mkdir()
    (root / "keep").write_text("x")
    argv = [
        sys.executable,
        "-c",
        HARNESS_CHILD,
        str(root),
        state_dir_outside,
        json.dumps([TOUCH_PROMPT, RM_FORBIDDEN]),
    ]
    env = {**os.environ, "STOCKADE_CONFIG": ""}
    with PtyChild(argv, cwd=scratch, env=env, rows=80, history=500) as child:
        screen = child.wait_for(lambda text: PROMPT in text, timeout=90)
        lines = screen.splitlines()
        # Asked before anything ran: the command, the rule, its reason, nothing widens,
        # and the exact words "allow for this session" would allow.
        assert not (root / "made").exists()
        assert (
            "stockade: a command rule asks you before this command runs; "
            "nothing runs unless you allow it."
        ) in lines
        assert "  command:   touch made" in lines
        assert "  rule:      ask-touch" in lines
        assert "  reason:    this project makes no empty files unasked" in lines
        assert "  mode:      workspace-write (unchanged: nothing widens)" in lines
        assert "  y:         allow once" in lines
        assert (
            "  s:         allow `touch made` and commands beginning with it "
            "for the rest of this session"
        ) in lines
        child.send(b"s\n")
        # The next command beginning with those words runs without a question; a new
        # session asks again (and is rejected here).
        screen = child.wait_for(lambda text: text.count(PROMPT) == 2, timeout=90)
        assert "RESULT-TWO:" in screen
        assert not (root / "third").exists()
        child.send(b"n\n")
        assert child.finish(timeout=90) == 0
        out = child.text().splitlines()
    results = {
        line.split(":", 1)[0]: line.split(":", 1)[1].strip()
        for line in out
        if line.startswith("RESULT-")
    }
    assert json.loads(results["RESULT-ONE"]) == [False, "terminal"]
    assert json.loads(results["RESULT-TWO"]) == [False, "session"]
    assert json.loads(results["RESULT-THREE"]) == [True, "rejected"]
    # A forbid rule asks nobody (two questions in all) and runs nothing.
    assert json.loads(results["RESULT-FORBIDDEN"]) == [True, "no-rm", True]
    assert (root / "keep").exists()
    assert (root / "made").exists() and (root / "second").exists()
    assert not (root / "third").exists()
    (sessions,) = [line for line in out if line.startswith("SESSIONS:")]
    first, other = sessions.split()[1:]
    # The first session's log: one question, answered for the session by the terminal,
    # and the session rule it made; the other session's: asked, rejected, no rule.
    events = log(state_dir_outside, first)
    (asked,) = of_type(events, "approval/asked")
    assert asked["rule"] == "ask-touch" and asked["session_prefix"] == ["touch", "made"]
    assert asked["requested_mode"] == asked["current_mode"] == "workspace-write"
    (answered,) = of_type(events, "approval/answered")
    assert (answered["decision"], answered["answerer"]) == ("allowed-for-session", "terminal")
    (allowed,) = of_type(events, "rules/session-allow")
    assert allowed["prefix"] == ["touch", "made"] and allowed["rule"] == "ask-touch"
    events = log(state_dir_outside, other)
    assert [a["decision"] for a in of_type(events, "approval/answered")] == ["rejected"]
    assert of_type(events, "rules/session-allow") == []
