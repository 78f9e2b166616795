"""The ACP answerer against a fake client, on virtual time."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from stockade.acp import ALLOW_ONCE, REJECT, SWITCH_SESSION, AcpAnswerer, AskContext, AskFailed
from stockade.approval import Answer, ApprovalRequest, Decision
from stockade.approval.actor import open_approval
from stockade.errors import StockadeError
from stockade.vocab import ApprovalPolicy, SandboxMode


def request(**overrides: Any) -> ApprovalRequest:
    fields = {
        "session_id": "s1",
        "command": "echo hi > f",
        "justification": "needed",
        "current_mode": SandboxMode.READ_ONLY,
        "requested_mode": SandboxMode.WORKSPACE_WRITE,
        "policy": ApprovalPolicy.ASK,
        "reason": "denied",
        "call_id": "call-1",
    }
    return ApprovalRequest(**{**fields, **overrides})


class FakeClient:
    """Answers with `answer` after `delay` seconds (None: never answers)."""

    def __init__(self, answer: Any = None, delay: float | None = 0.0) -> None:
        self.answer = answer
        self.delay = delay
        self.asked: list[dict[str, Any]] = []

    async def request_permission(self, params: dict[str, Any]) -> Any:
        self.asked.append(params)
        if self.delay is None:
            await trio.sleep_forever()
        await trio.sleep(self.delay)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def selected(option: str) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": option}}


def answerer(client: FakeClient, context: AskContext | None, **options: Any) -> AcpAnswerer:
    return AcpAnswerer(
        directory=lambda sid: (
            context if context is not None and sid == context.session_id else None
        ),
        channel=client,
        **options,
    )


async def test_allow_once_and_reject_are_decisions_of_the_acp_answerer():
    context = AskContext(session_id="s1", root="/w", calls={"call-1": ("bash", {"workdir": "sub"})})
    client = FakeClient(selected(ALLOW_ONCE))
    answer = await answerer(client, context).answer(request())
    assert (answer.decision, answer.answerer) == (Decision.ALLOWED_ONCE, "acp")
    params = client.asked[0]
    assert params["sessionId"] == "s1"
    assert params["toolCall"]["toolCallId"] == "call-1"
    assert params["toolCall"]["rawInput"]["cwd"] == "/w/sub"
    assert context.asking == 0
    client.answer = selected(REJECT)
    assert (await answerer(client, context).answer(request())).decision is Decision.REJECTED


async def test_a_session_it_does_not_serve_is_passed_on():
    client = FakeClient(selected(ALLOW_ONCE))
    assert await answerer(client, None).answer(request()) is None
    context = AskContext(session_id="s1", root="/w")
    assert await AcpAnswerer(directory=lambda _sid: context).answer(request()) is None
    assert client.asked == []


async def test_no_answer_in_time_is_unavailable(autojump_clock):
    context = AskContext(session_id="s1", root="/w")
    answer = await answerer(FakeClient(delay=None), context, timeout=300).answer(request())
    assert answer.decision is Decision.UNAVAILABLE
    assert answer.detail == "no answer from the client within 300 s"
    assert trio.current_time() == pytest.approx(300)


async def test_an_answer_just_in_time_counts(autojump_clock):
    context = AskContext(session_id="s1", root="/w")
    client = FakeClient(selected(ALLOW_ONCE), delay=299)
    answer = await answerer(client, context, timeout=300).answer(request())
    assert answer.decision is Decision.ALLOWED_ONCE
    assert trio.current_time() == pytest.approx(299)


async def test_session_cancel_while_the_question_is_open_is_cancelled(autojump_clock):
    context = AskContext(session_id="s1", root="/w")
    result = []

    async def ask() -> None:
        result.append(
            await answerer(FakeClient(delay=None), context, timeout=None).answer(request())
        )

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask)
        await trio.sleep(5)
        assert context.asking == 1
        context.cancel()
    (answer,) = result
    assert (answer.decision, answer.detail) == (
        Decision.CANCELLED,
        "session/cancel while the question was open",
    )
    assert trio.current_time() == pytest.approx(5)
    assert context.asking == 0


async def test_a_cancelled_turn_asks_nobody():
    context = AskContext(session_id="s1", root="/w")
    context.cancel()
    client = FakeClient(selected(ALLOW_ONCE))
    answer = await answerer(client, context).answer(request())
    assert answer.decision is Decision.CANCELLED
    assert client.asked == []


@pytest.mark.parametrize(
    ("answer", "detail"),
    [
        (
            AskFailed("the client answered with error -32601: Method not found"),
            "could not be asked",
        ),
        ({"outcome": {"outcome": "selected", "optionId": "yes"}}, "not offered"),
        ({"nonsense": True}, "no outcome"),
    ],
)
async def test_a_client_that_cannot_answer_leaves_it_unavailable(answer, detail):
    context = AskContext(session_id="s1", root="/w")
    got = await answerer(FakeClient(answer), context).answer(request())
    assert got.decision is Decision.UNAVAILABLE
    assert detail in got.detail


async def test_allow_always_switches_the_session_then_allows_this_call():
    switched = []

    async def switch(asked: ApprovalRequest) -> str:
        switched.append(asked.requested_mode)
        return "selected preset 'workspace-write'"

    context = AskContext(session_id="s1", root="/w", switch=switch)
    client = FakeClient(selected(SWITCH_SESSION))
    answer = await answerer(client, context, allow_always=True).answer(request())
    assert (answer.decision, answer.detail) == (
        Decision.ALLOWED_ONCE,
        "allow_always: selected preset 'workspace-write'",
    )
    assert switched == [SandboxMode.WORKSPACE_WRITE]
    assert [o["kind"] for o in client.asked[0]["options"]] == [
        "allow_once",
        "allow_always",
        "reject_once",
    ]


async def test_allow_always_is_not_offered_without_the_deployment_or_a_switch_path():
    for enabled, switch in ((False, None), (True, None)):
        context = AskContext(session_id="s1", root="/w", switch=switch)
        client = FakeClient(selected(SWITCH_SESSION))
        answer = await answerer(client, context, allow_always=enabled).answer(request())
        assert answer.decision is Decision.UNAVAILABLE
        assert "allow_always" not in [o["kind"] for o in client.asked[0]["options"]]


async def test_a_switch_that_fails_still_allows_only_once():
    async def switch(_asked: ApprovalRequest) -> str:
        raise StockadeError("the log is gone")

    context = AskContext(session_id="s1", root="/w", switch=switch)
    answer = await answerer(
        FakeClient(selected(SWITCH_SESSION)), context, allow_always=True
    ).answer(request())
    assert answer.decision is Decision.ALLOWED_ONCE
    assert "switch failed (the log is gone); allowed once" in answer.detail


async def test_through_the_approval_actor_every_ask_is_audited():
    audited = []

    async def audit(session_id: str, event: Any) -> None:
        audited.append((session_id, event.tag))

    context = AskContext(session_id="s1", root="/w")
    chain = [answerer(FakeClient(selected(REJECT)), context)]
    async with open_approval(chain, audit=audit) as approval:
        answer = await approval.ask(request())
        passed = await approval.ask(request(session_id="elsewhere"))
    assert (answer.decision, answer.answerer) == (Decision.REJECTED, "acp")
    assert (passed.decision, passed.answerer) == (Decision.UNAVAILABLE, "nobody")
    assert [tag for _sid, tag in audited] == ["approval/asked", "approval/answered"] * 2


async def test_an_answer_that_comes_in_as_the_caller_leaves_is_still_audited(autojump_clock):
    """At the end of input the client's connection fails the open question (the
    answer: unavailable) while the turn that asked is being cancelled: the log must
    still hold the answer, not a question left open forever."""
    audited = []

    async def audit(_session_id: str, event: Any) -> None:
        await trio.sleep(1)  # an append takes time
        audited.append(event.tag)

    caller = trio.CancelScope()

    class Leaving:
        name = "leaving"

        async def answer(self, _request: ApprovalRequest) -> Answer:
            caller.cancel()
            return Answer(Decision.UNAVAILABLE, self.name, "the connection is gone")

    async with open_approval([Leaving()], audit=audit) as approval:
        with caller:
            await approval.ask(request())
        await trio.sleep(5)
    assert audited == ["approval/asked", "approval/answered"]
