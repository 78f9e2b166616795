"""One approved wider retry after a denial: every outcome, its text, its log, what ran."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from stockade import open_harness
from stockade.approval.answerers import ScriptedAnswerer
from stockade.approval.events import ApprovalAnswered, ApprovalAsked
from stockade.tools.bash import BashTool

from .conftest import composition

WRITE = "echo wrote > out.txt"


def escalate(command=WRITE, mode="workspace-write", **extra):
    return {
        "command": command,
        "sandbox_permissions": mode,
        "justification": "needs to write out.txt",
        **extra,
    }


async def read_only_session(harness, root):
    session = await harness.open_session(cwd=root)
    await session.set_sandbox_mode("read-only")
    return session


def audit(events):
    return [
        (type(e).__name__, getattr(e, "decision", None))
        for e in events
        if isinstance(e, ApprovalAsked | ApprovalAnswered)
    ]


async def test_allowed_once_runs_exactly_this_call_wider(state_dir, projects):
    root, _ = projects
    answerer = ScriptedAnswerer(["allowed-once"])
    async with open_harness(composition(state_dir), answerers=[answerer]) as harness:
        session = await read_only_session(harness, root)
        denied = await session.run_tool("bash", {"command": WRITE})
        assert denied.facts["denied"] and not (root / "out.txt").exists()
        assert "sandbox_permissions" in denied.text  # the hint at the decision point
        granted = await session.run_tool("bash", escalate())
        neighbour = await session.run_tool("bash", {"command": "echo n > neighbour.txt"})
        again = await session.run_tool("bash", {"command": WRITE.replace("out", "out2")})
        events = await session.events()
    assert (root / "out.txt").read_text() == "wrote\n"
    assert (
        granted.facts["mode"] == "workspace-write" and granted.facts["granted"] == "workspace-write"
    )
    assert 'escalation granted once: this call ran under "workspace-write"' in granted.text
    assert neighbour.facts["mode"] == "read-only" and not (root / "neighbour.txt").exists()
    assert again.facts["mode"] == "read-only"
    assert audit(events) == [("ApprovalAsked", None), ("ApprovalAnswered", "allowed-once")]
    asked = next(e for e in events if isinstance(e, ApprovalAsked))
    assert asked.reason == "the sandbox denied this command under read-only"
    assert answerer.seen[0].current_mode.value == "read-only"


async def test_rejected_runs_nothing_and_forbids_a_re_ask_this_turn(state_dir, projects):
    root, _ = projects
    answerer = ScriptedAnswerer(["rejected", "allowed-once"])
    async with open_harness(composition(state_dir), answerers=[answerer]) as harness:
        session = await read_only_session(harness, root)
        rejected = await session.run_tool("bash", escalate())
        re_ask = await session.run_tool("bash", escalate())
        assert len(answerer.seen) == 1
        await session.pre_step()  # a new turn: asking again is allowed
        later = await session.run_tool("bash", escalate())
        events = await session.events()
    assert rejected.is_error
    assert rejected.text.startswith(
        'the user rejected escalating this command to "workspace-write"'
    )
    assert re_ask.is_error and "may not be asked again" in re_ask.text
    assert later.facts["granted"] == "workspace-write"
    assert len(answerer.seen) == 2
    assert [d for _, d in audit(events) if d] == ["rejected", "allowed-once"]


@pytest.mark.parametrize(
    ("decisions", "policy", "expected", "asked"),
    [
        (["cancelled"], "ask", "cancelled before the user decided", 1),
        ([], "ask", 'escalating to "workspace-write" is unavailable', 1),
        (["allowed-once"], "never", 'escalating to "workspace-write" is unavailable', 0),
    ],
)
async def test_cancelled_and_unavailable_run_nothing(
    state_dir, projects, decisions, policy, expected, asked
):
    root, _ = projects
    answerer = ScriptedAnswerer(list(decisions))
    async with open_harness(composition(state_dir), answerers=[answerer]) as harness:
        session = await read_only_session(harness, root)
        await session.set_approval_policy(policy)
        result = await session.run_tool("bash", escalate())
        events = await session.events()
    assert result.is_error and expected in result.text
    assert len(answerer.seen) == asked
    assert not (root / "out.txt").exists()
    assert audit(events)[-1][0] == "ApprovalAnswered"


async def test_no_approval_service_fails_escalation_closed_but_plain_calls_run(state_dir, projects):
    root, _ = projects
    async with open_harness(composition(state_dir, approval=False)) as harness:
        session = await read_only_session(harness, root)
        escalated = await session.run_tool("bash", escalate())
        plain = await session.run_tool("bash", {"command": "echo plain"})
    assert escalated.is_error and "no approval service" in escalated.text
    assert plain.text.startswith("plain")
    assert not (root / "out.txt").exists()


async def test_no_session_cannot_escalate(state_dir, projects):
    root, _ = projects
    entries = composition(state_dir, workspace_root=str(root), mode="read-only")
    async with open_harness(entries) as harness:
        tool = BashTool(executor=harness.executor, approval=harness.approval)
        result = await tool.call("direct-1", escalate(), session=None)
        plain = await tool.call("direct-2", {"command": "echo direct"}, session=None)
    assert result.is_error and "needs a session" in result.text
    assert plain.text.startswith("direct")
    assert not (root / "out.txt").exists()


@pytest.mark.parametrize("requested", ["read-only", "workspace-write"])
async def test_non_widening_requests_prompt_no_one(state_dir, projects, requested):
    root, _ = projects
    answerer = ScriptedAnswerer(["allowed-once"])
    async with open_harness(composition(state_dir), answerers=[answerer]) as harness:
        session = await harness.open_session(cwd=root)  # workspace-write by default
        result = await session.run_tool("bash", escalate(mode=requested))
        events = await session.events()
    assert result.is_error and "is not wider than this call's current mode" in result.text
    assert answerer.seen == []
    assert audit(events) == []
    assert not (root / "out.txt").exists()


async def test_a_grant_does_not_leak_into_fifty_concurrent_calls(state_dir, projects):
    root, _ = projects
    answerer = ScriptedAnswerer(["allowed-once"])
    async with open_harness(composition(state_dir), answerers=[answerer]) as harness:
        session = await read_only_session(harness, root)
        results = {}

        async def call(index):
            arguments = {"command": f"sleep 0.05; echo {index} > f{index}"}
            if index == 25:
                arguments = escalate(command=arguments["command"])
            results[index] = await session.run_tool("bash", arguments)

        async with trio.open_nursery() as nursery:
            for index in range(50):
                nursery.start_soon(call, index)
    written = sorted(p.name for p in root.iterdir())
    assert written == ["f25"]
    assert results[25].facts["mode"] == "workspace-write"
    assert all(results[i].facts["mode"] == "read-only" for i in range(50) if i != 25)


async def test_background_escalation_runs_only_that_job_wider(state_dir, projects):
    root, _ = projects
    answerer = ScriptedAnswerer(["allowed-once"])
    async with open_harness(composition(state_dir), answerers=[answerer]) as harness:
        session = await read_only_session(harness, root)
        granted = await session.run_tool(
            "bash", escalate(command="echo bg > bg.txt", background=True)
        )
        plain = await session.run_tool("bash", {"command": "echo n > n.txt", "background": True})
        report = await session.shell.wait(granted.facts["job_id"])
        # Not read here (read=False): the model reads it next, which is its last read.
        neighbour = await session.shell.wait(plain.facts["job_id"], read=False)
        denied_view = await session.run_tool("job_output", {"job_id": plain.facts["job_id"]})
    assert report.mode.value == "workspace-write" and not report.denied
    assert (root / "bg.txt").read_text() == "bg\n"
    assert neighbour.mode.value == "read-only" and neighbour.denied
    assert not (root / "n.txt").exists()
    assert "[sandbox: file access denied under read-only mode]" in denied_view.text
    assert "sandbox_permissions" in denied_view.text  # a later denial can ground a retry


async def test_granted_danger_full_access_never_touches_the_provider(state_dir, projects):
    root, sibling = projects
    entries = composition(state_dir)
    entries[0]["config"] = {"runner_command": "/nonexistent/runner"}
    answerer = ScriptedAnswerer(["allowed-once", "allowed-once"])
    async with open_harness(entries, answerers=[answerer]) as harness:
        session = await read_only_session(harness, root)
        free = await session.run_tool(
            "bash", escalate(command=f"echo free > {sibling}/free.txt", mode="danger-full-access")
        )
        broken = await session.run_tool("bash", escalate())
    assert free.facts["backend"] == "none" and (sibling / "free.txt").exists()
    # A granted confining mode on a host whose runner cannot start still fails closed.
    assert broken.is_error and broken.text.startswith("SANDBOX_UNAVAILABLE")
    assert not (root / "out.txt").exists()
    assert Path(sibling).exists()
