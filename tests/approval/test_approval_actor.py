"""The ApprovalActor: chain order, the policy gate, built-in answerers, audit, cancellation."""

from __future__ import annotations

import io

import pytest
import trio
import trio.lowlevel
import trio_asyncio

from stockade.approval._chain import Answer, ApprovalRequest, Decision
from stockade.approval.actor import open_approval
from stockade.approval.answerers import (
    AsyncioAnswerer,
    CallbackAnswerer,
    RejectRule,
    RejectRules,
    ScriptedAnswerer,
    TerminalAnswerer,
)
from stockade.vocab import ApprovalPolicy, SandboxMode


def ask(session="s1", command="touch /etc/x", policy=ApprovalPolicy.ASK, **overrides):
    fields = dict(
        session_id=session,
        command=command,
        justification="needs to write the config",
        current_mode=SandboxMode.READ_ONLY,
        requested_mode=SandboxMode.WORKSPACE_WRITE,
        policy=policy,
        reason="denied under read-only",
    )
    fields.update(overrides)
    return ApprovalRequest(**fields)


class Audit:
    def __init__(self):
        self.events = []

    async def __call__(self, session_id, event):
        self.events.append((session_id, event))

    def kinds(self):
        return [(sid, event.tag) for sid, event in self.events]


async def test_first_decision_wins_and_is_audited():
    audit = Audit()
    first, second = ScriptedAnswerer([]), ScriptedAnswerer(["allowed-once"], name="second")
    async with open_approval([first, second], audit) as approval:
        decided = await approval.ask(ask())
    assert decided == Answer(Decision.ALLOWED_ONCE, "second")
    assert len(first.seen) == 1 and len(second.seen) == 1
    assert audit.kinds() == [("s1", "approval/asked"), ("s1", "approval/answered")]
    asked, answered = (event for _, event in audit.events)
    assert asked.command == "touch /etc/x" and asked.requested_mode == "workspace-write"
    assert asked.reason == "denied under read-only"
    assert (answered.decision, answered.answerer, answered.ask_id) == (
        "allowed-once",
        "second",
        asked.ask_id,
    )


async def test_policy_never_answers_unavailable_asking_nobody():
    audit = Audit()
    scripted = ScriptedAnswerer(["allowed-once"])
    async with open_approval([scripted], audit) as approval:
        decided = await approval.ask(ask(policy=ApprovalPolicy.NEVER))
    assert decided.decision is Decision.UNAVAILABLE and decided.answerer == "policy"
    assert scripted.seen == []
    assert audit.events[-1][1].decision == "unavailable"


async def test_nobody_answering_is_unavailable():
    async with open_approval([ScriptedAnswerer([])]) as approval:
        decided = await approval.ask(ask())
    assert decided.decision is Decision.UNAVAILABLE


async def test_reject_rules_come_first_with_their_reason():
    rules = RejectRules((RejectRule(r"\brm\s+-rf\b", "recursive deletes are never escalated"),))
    later = ScriptedAnswerer(["allowed-once"])
    async with open_approval([rules, later]) as approval:
        rejected = await approval.ask(ask(command="rm -rf build"))
        allowed = await approval.ask(ask(command="make build"))
    assert rejected == Answer(
        Decision.REJECTED, "reject-rules", "recursive deletes are never escalated"
    )
    assert allowed.decision is Decision.ALLOWED_ONCE
    assert [r.command for r in later.seen] == ["make build"]


async def test_trio_callback_answerer_may_return_a_string_a_decision_or_pass():
    replies = iter(["rejected", Decision.CANCELLED, None])

    async def decide(_request):
        await trio.lowlevel.checkpoint()
        return next(replies)

    async with open_approval([CallbackAnswerer(decide)]) as approval:
        outcomes = [(await approval.ask(ask())).decision for _ in range(3)]
    assert outcomes == [Decision.REJECTED, Decision.CANCELLED, Decision.UNAVAILABLE]


async def test_asyncio_coroutine_answerer_through_trio_asyncio():
    import asyncio

    async def decide(request):
        await asyncio.sleep(0)
        return "allowed-once" if "make" in request.command else "rejected"

    async with trio_asyncio.open_loop(), open_approval([AsyncioAnswerer(decide)]) as approval:
        assert (await approval.ask(ask(command="make"))).decision is Decision.ALLOWED_ONCE
        assert (await approval.ask(ask(command="rm x"))).decision is Decision.REJECTED


async def test_concurrent_asks_from_different_sessions_wait_independently():
    release_slow = trio.Event()

    async def decide(request):
        if request.session_id == "slow":
            await release_slow.wait()
        return "allowed-once"

    order = []
    async with open_approval([CallbackAnswerer(decide)]) as approval:

        async def asker(session):
            await approval.ask(ask(session=session))
            order.append(session)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(asker, "slow")
            await trio.sleep(0.01)
            nursery.start_soon(asker, "fast")
            await trio.sleep(0.05)
            assert order == ["fast"]
            release_slow.set()
    assert order == ["fast", "slow"]


async def test_cancelling_the_caller_cancels_its_ask_and_audits_it():
    audit = Audit()
    started = trio.Event()

    async def never_answers(_request):
        started.set()
        await trio.sleep_forever()

    async with open_approval([CallbackAnswerer(never_answers)], audit) as approval:
        with trio.move_on_after(5) as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(approval.ask, ask())
                await started.wait()
                nursery.cancel_scope.cancel()
        assert not scope.cancelled_caught
        with trio.fail_after(5):
            while len(audit.events) < 2:
                await trio.sleep(0.01)
    answered = audit.events[-1][1]
    assert (answered.decision, answered.answerer) == ("cancelled", "caller")


class FakeTerminal(io.StringIO):
    def __init__(self, reply):
        super().__init__(reply)
        self.shown = ""

    def write(self, text):
        self.shown += text
        return len(text)


@pytest.mark.parametrize(
    ("reply", "decision"),
    [
        ("y\n", Decision.ALLOWED_ONCE),
        ("yes\n", Decision.ALLOWED_ONCE),
        ("n\n", Decision.REJECTED),
        ("\n", Decision.REJECTED),
        ("", Decision.CANCELLED),
    ],
)
async def test_terminal_answerer_reads_y_or_n(reply, decision):
    terminal = FakeTerminal(reply)
    answerer = TerminalAnswerer(opener=lambda: terminal)
    decided = await answerer.answer(ask())
    assert decided.decision is decision
    assert "touch /etc/x" in terminal.shown and "read-only -> workspace-write" in terminal.shown


async def test_terminal_answerer_without_a_terminal_is_unavailable():
    decided = await TerminalAnswerer(opener=lambda: None).answer(ask())
    assert decided.decision is Decision.UNAVAILABLE
