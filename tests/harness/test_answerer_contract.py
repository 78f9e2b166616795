"""The answerer contract, through run_tool: what a callback may return, and what any
answerer's exception or invalid value becomes (`unavailable`, logged, never raised)."""

from __future__ import annotations

import logging

import pytest
import trio
import trio.lowlevel

import stockade
from stockade import Answer, CallbackAnswerer, Decision, ScriptedAnswerer, open_harness
from stockade.approval.events import ApprovalAnswered

from .conftest import composition

WRITE = "echo wrote > out.txt"
ESCALATE = {
    "command": WRITE,
    "sandbox_permissions": "workspace-write",
    "justification": "needs to write out.txt",
}


async def escalate_once(state_dir, root, answerers):
    """One escalation from read-only; the tool result and the session's audit answer."""
    async with open_harness(composition(state_dir), answerers=answerers) as harness:
        session = await harness.open_session(cwd=root)
        await session.set_sandbox_mode("read-only")
        result = await session.run_tool("bash", ESCALATE)
        events = await session.events()
    answered = [e for e in events if isinstance(e, ApprovalAnswered)]
    assert len(answered) == 1
    return result, answered[0]


def sync_returning(value):
    return lambda _request: value


def async_returning(value):
    async def callback(_request):
        await trio.lowlevel.checkpoint()
        return value

    return callback


ACCEPTED = [
    (True, "allowed-once"),
    (False, "rejected"),
    ("allowed-once", "allowed-once"),
    ("rejected", "rejected"),
    ("cancelled", "cancelled"),
    ("unavailable", "unavailable"),
    (Decision.ALLOWED_ONCE, "allowed-once"),
    (Decision.REJECTED, "rejected"),
    (Answer(Decision.ALLOWED_ONCE, "my-ui", "ok"), "allowed-once"),
]


@pytest.mark.parametrize("make", [sync_returning, async_returning], ids=["sync", "async"])
@pytest.mark.parametrize(("value", "decision"), ACCEPTED, ids=[repr(v) for v, _ in ACCEPTED])
async def test_a_callback_may_return_a_bool_a_decision_or_its_value(
    state_dir, projects, make, value, decision
):
    root, _ = projects
    result, answered = await escalate_once(state_dir, root, [CallbackAnswerer(make(value))])
    assert answered.decision == decision and answered.error is None
    assert answered.answerer == ("my-ui" if isinstance(value, Answer) else "callback")
    assert (root / "out.txt").exists() is (decision == "allowed-once")
    assert result.is_error is (decision != "allowed-once")
    if decision != "allowed-once":
        assert result.facts["outcome"] == decision


async def test_a_callback_returning_none_passes_to_the_next_answerer(state_dir, projects):
    root, _ = projects
    answerers = [CallbackAnswerer(sync_returning(None)), ScriptedAnswerer(["allowed-once"])]
    _result, answered = await escalate_once(state_dir, root, answerers)
    assert (answered.decision, answered.answerer) == ("allowed-once", "scripted")


class Raising:
    name = "raising"

    async def answer(self, request):
        raise RuntimeError("the approval UI crashed at /srv/secret/ui.py")


class ReturningGarbage:
    name = "garbage"

    async def answer(self, request):
        return "yes please"


class NotAsync:
    name = "not-async"

    def answer(self, request):
        return Answer(Decision.ALLOWED_ONCE, self.name)


def raising_callback(_request):
    raise ValueError("no such user")


BROKEN = {
    "callback returns 'yes'": (CallbackAnswerer(sync_returning("yes")), "'yes'"),
    "async callback returns 1": (CallbackAnswerer(async_returning(1)), "gave back 1"),
    "callback returns a dict": (CallbackAnswerer(sync_returning({})), "gave back {}"),
    "callback raises": (CallbackAnswerer(raising_callback), "ValueError: no such user"),
    "answerer raises": (Raising(), "RuntimeError: the approval UI crashed"),
    "answerer returns text": (ReturningGarbage(), "'yes please'"),
    "answerer is not async": (NotAsync(), "TypeError"),
    "script holds 'yes'": (ScriptedAnswerer(["yes"]), "'yes'"),
}


@pytest.mark.parametrize(("answerer", "why"), BROKEN.values(), ids=BROKEN.keys())
async def test_a_broken_answerer_is_unavailable_logged_and_never_raised(
    state_dir, projects, caplog, answerer, why
):
    root, _ = projects
    later = ScriptedAnswerer(["allowed-once"])
    with caplog.at_level(logging.ERROR, logger="stockade.approval"):
        result, answered = await escalate_once(state_dir, root, [answerer, later])
    # The model is told escalation is unavailable and that nothing ran; nothing did.
    assert result.is_error and result.facts["outcome"] == "unavailable"
    assert 'escalating to "workspace-write" is unavailable' in result.text
    assert "Nothing ran" in result.text and not (root / "out.txt").exists()
    # ...without the error's text (it may hold host details), which goes to the log.
    assert "secret" not in result.text and "no such user" not in result.text
    assert answered.decision == "unavailable" and answered.answerer == answerer.name
    assert why in answered.error
    # A broken answerer is not a pass: the chain stops there.
    assert later.seen == []
    records = [r for r in caplog.records if r.name == "stockade.approval"]
    assert len(records) == 1 and records[0].levelno == logging.ERROR
    assert why in records[0].getMessage() and "unavailable" in records[0].getMessage()


async def test_the_contract_names_are_public():
    assert stockade.Decision is Decision and stockade.CallbackAnswerer is CallbackAnswerer
    assert {d.value for d in Decision} == {
        "allowed-once",
        "allowed-for-session",  # a command rule's prompt, "allow for this session" (issue 40)
        "rejected",
        "cancelled",
        "unavailable",
    }
