"""Command rules at the bash tool, on the real sandbox: forbid runs nothing, prompt asks
before anything runs (once, or for the session), allow approves an escalation without
asking; judged on the host's state, each beside a control without the rule."""

from __future__ import annotations

from stockade import open_harness
from stockade.approval.answerers import ScriptedAnswerer
from stockade.approval.events import ApprovalAnswered, ApprovalAsked
from stockade.policy import SessionRuleAllowed

from .conftest import composition

TOUCH_FORBIDDEN = {
    "name": "no-touch",
    "prefix": ["touch"],
    "decision": "forbid",
    "reason": "this project makes no empty files",
    "match": ["touch x"],
}
TOUCH_PROMPT = {**TOUCH_FORBIDDEN, "name": "ask-touch", "decision": "prompt"}
CAT_ALLOWED = {
    "name": "cat-anything",
    "prefix": ["cat"],
    "decision": "allow",
    "reason": "reading is fine",
    "match": ["cat /etc/hostname"],
}


def ruled(state_dir: str, *rules: dict, **bash: object) -> list[dict]:
    return composition(state_dir, rules=list(rules), **bash)


def asked(events) -> list[ApprovalAsked]:
    return [e for e in events if isinstance(e, ApprovalAsked)]


async def test_a_forbidden_command_runs_nothing_and_says_the_rule(state_dir, projects):
    root, control_root = projects
    async with open_harness(ruled(state_dir, TOUCH_FORBIDDEN)) as harness:
        session = await harness.open_session(cwd=root)
        for script in (
            "touch made",
            "true; touch made",
            "echo $(touch made)",
            "env A=1 touch made",
        ):
            result = await session.run_tool("bash", {"command": script})
            assert result.is_error and "FORBIDDEN" in result.text and "no-touch" in result.text
            assert "this project makes no empty files" in result.text
            assert result.facts["rule"] == "no-touch"
    assert not (root / "made").exists()
    # The control: without the rule the same command makes the file.
    async with open_harness(ruled(state_dir)) as harness:
        session = await harness.open_session(cwd=control_root)
        await session.run_tool("bash", {"command": "touch made"})
    assert (control_root / "made").exists()


async def test_a_prompt_asks_before_anything_runs_and_a_rejection_runs_nothing(state_dir, projects):
    root, _ = projects
    answerer = ScriptedAnswerer(["rejected", "allowed-once"])
    async with open_harness(ruled(state_dir, TOUCH_PROMPT), answerers=[answerer]) as harness:
        session = await harness.open_session(cwd=root)
        rejected = await session.run_tool("bash", {"command": "touch first"})
        assert rejected.is_error and "rejected" in rejected.text
        assert not (root / "first").exists()
        await session.pre_step()
        allowed = await session.run_tool("bash", {"command": "touch second"})
        events = await session.events()
    assert not allowed.is_error and (root / "second").exists()
    request = answerer.seen[1]
    assert request.rule == "ask-touch" and request.session_prefix == ("touch", "second")
    assert request.requested_mode is request.current_mode
    assert [e.rule for e in asked(events)] == ["ask-touch", "ask-touch"]


async def test_allow_for_this_session_answers_the_next_match_and_dies_with_the_session(
    state_dir, projects
):
    root, _ = projects
    answerer = ScriptedAnswerer(["allowed-for-session", "rejected"])
    async with open_harness(ruled(state_dir, TOUCH_PROMPT), answerers=[answerer]) as harness:
        session = await harness.open_session(cwd=root)
        await session.run_tool("bash", {"command": "touch a"})
        again = await session.run_tool("bash", {"command": "touch a -c"})
        child = await session.fork_child()
        child_events = await child.events()
        events = await session.events()
        # Another session: asked again (and this time rejected).
        other = await harness.open_session(cwd=root)
        refused = await other.run_tool("bash", {"command": "touch a"})
    assert (root / "a").exists() and not again.is_error
    assert again.facts["answered_by"] == "session"
    assert len(answerer.seen) == 2  # the first ask, and the other session's
    assert [e.prefix for e in events if isinstance(e, SessionRuleAllowed)] == [("touch", "a")]
    assert [e.prefix for e in child_events if isinstance(e, SessionRuleAllowed)] == [("touch", "a")]
    assert refused.is_error


async def test_a_session_allowance_never_answers_another_command_or_doubt(state_dir, projects):
    root, _ = projects
    answerer = ScriptedAnswerer(["allowed-for-session", "rejected", "rejected"])
    async with open_harness(ruled(state_dir, TOUCH_PROMPT), answerers=[answerer]) as harness:
        session = await harness.open_session(cwd=root)
        await session.run_tool("bash", {"command": "touch a"})
        other = await session.run_tool("bash", {"command": "touch b"})
        await session.pre_step()
        doubt = await session.run_tool("bash", {"command": "T=touch; $T a"})
    assert other.is_error and doubt.is_error and not (root / "b").exists()
    assert len(answerer.seen) == 3


async def test_an_allow_rule_approves_an_escalation_without_asking(state_dir, projects):
    root, _ = projects
    answerer = ScriptedAnswerer([])  # asking anybody would be unavailable
    async with open_harness(ruled(state_dir, CAT_ALLOWED), answerers=[answerer]) as harness:
        session = await harness.open_session(cwd=root)
        result = await session.run_tool(
            "bash",
            {
                "command": "cat /etc/hostname",
                "sandbox_permissions": "with_network",
                "justification": "needs the network",
            },
        )
        events = await session.events()
    assert not result.is_error and result.facts["granted"] == "with_network"
    assert answerer.seen == []
    (answered,) = [e for e in events if isinstance(e, ApprovalAnswered)]
    assert answered.answerer == "rule:cat-anything" and answered.decision == "allowed-once"
    assert asked(events)[0].allowed_by_rule == "cat-anything"


async def test_reject_patterns_still_win_over_an_allow_rule(state_dir, projects):
    root, _ = projects
    entries = ruled(state_dir, CAT_ALLOWED)
    for entry in entries:
        if entry["id"] == "approval":
            entry["config"] = {"reject": [{"pattern": "hostname", "reason": "not that file"}]}
    async with open_harness(entries, answerers=[ScriptedAnswerer([])]) as harness:
        session = await harness.open_session(cwd=root)
        result = await session.run_tool(
            "bash",
            {
                "command": "cat /etc/hostname",
                "sandbox_permissions": "with_network",
                "justification": "needs the network",
            },
        )
        events = await session.events()
    assert result.is_error and result.facts["outcome"] == "rejected"
    (answered,) = [e for e in events if isinstance(e, ApprovalAnswered)]
    assert answered.answerer == "reject-rules" and answered.detail == "not that file"


async def test_a_prompt_under_approval_policy_never_runs_nothing(state_dir, projects):
    root, _ = projects
    answerer = ScriptedAnswerer(["allowed-once"])
    async with open_harness(ruled(state_dir, TOUCH_PROMPT), answerers=[answerer]) as harness:
        session = await harness.open_session(cwd=root)
        await session.set_approval_policy("never")
        result = await session.run_tool("bash", {"command": "touch x"})
    assert result.is_error and "could not be asked" in result.text
    assert not (root / "x").exists() and answerer.seen == []


async def test_the_default_rules_are_in_force_without_any_in_the_composition(state_dir, projects):
    root, _ = projects
    answerer = ScriptedAnswerer(["rejected"])
    async with open_harness(ruled(state_dir), answerers=[answerer]) as harness:
        session = await harness.open_session(cwd=root)
        (root / "keep").write_text("x")
        result = await session.run_tool("bash", {"command": "rm -rf ."})
    assert result.is_error and (root / "keep").exists()
    assert answerer.seen[0].rule == "delete-workspace"


async def test_no_session_allowance_is_offered_for_words_quoting_makes_ambiguous(
    state_dir, projects
):
    """`'~'` and `~` resolve to the same word: allowing one for the session must not
    answer the other, so such a prompt offers the session choice to nobody."""
    root, _ = projects
    answerer = ScriptedAnswerer(["rejected", "rejected"])
    async with open_harness(ruled(state_dir, TOUCH_PROMPT), answerers=[answerer]) as harness:
        session = await harness.open_session(cwd=root)
        await session.run_tool("bash", {"command": "touch '~'"})
        await session.pre_step()
        await session.run_tool("bash", {"command": "touch 'a b'"})
    assert [r.session_prefix for r in answerer.seen] == [(), ()]


async def test_a_session_allowance_answers_only_its_rule_and_its_command_as_written(
    state_dir, projects
):
    """Allowed `git push -f origin main` for the session: `sudo git push ...`, `git -C
    elsewhere push ...`, `A=1 git push ...` and another rule's prompt are still asked."""
    root, _ = projects
    other_rule = {
        "name": "ask-branch-delete",
        "prefix": ["git", "push"],
        "args": [["--delete"]],
        "decision": "prompt",
        "reason": "deleting a remote branch",
        "match": ["git push --delete origin x"],
    }
    later = [
        "sudo git push -f origin main",
        "git -C /elsewhere push -f origin main",
        "GIT_SSH_COMMAND=./x git push -f origin main",
        "git push -f origin main --delete x",
    ]
    answerer = ScriptedAnswerer(["allowed-for-session", *(["rejected"] * len(later)), None])
    async with open_harness(ruled(state_dir, other_rule), answerers=[answerer]) as harness:
        session = await harness.open_session(cwd=root)
        await session.run_tool("bash", {"command": "git push -f origin main"})
        for script in later:
            await session.pre_step()
            await session.run_tool("bash", {"command": script})
    assert answerer.seen[0].session_prefix == ("git", "push", "-f", "origin", "main")
    assert [r.command for r in answerer.seen[1:]] == later
