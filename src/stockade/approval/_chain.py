"""The answerer protocol and the chain that asks them in order.

An answerer decides (`allowed-once`, `allowed-for-session`, `rejected`, `cancelled`,
`unavailable`) or passes (None); nobody deciding means `unavailable`. An escalation a
command rule allows is approved after the reject rules, before anybody is asked.

The contract (docs/embedding.md, "Answerers"): what an answerer or a callback gives
back is read by `as_answer` (an `Answer`, a `Decision`, the decision's string value,
a bool, or None to pass). An answerer that raises, or gives back anything else, ends
the chain with `unavailable`: the error goes to Python logging (`stockade.approval`)
and to the `approval/answered` event's `error`, and never out of the tool call.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

# The approval inbox's data lives with every inbox's, in `messages`; the answerer
# protocol is written in it, and this room's surface still names it.
from ..messages import Answer as Answer
from ..messages import ApprovalRequest as ApprovalRequest
from ..messages import Decision as Decision
from ..vocab import ApprovalPolicy


@runtime_checkable
class Answerer(Protocol):
    """Something that may decide an approval request, or pass (return None)."""

    @property
    def name(self) -> str: ...

    async def answer(self, request: ApprovalRequest) -> Answer | None: ...


NOBODY = "nobody"
logger = logging.getLogger("stockade.approval")
# What one failure may put in the log: an exception's text can be anything.
ERROR_TEXT_LIMIT = 500


class InvalidDecision(TypeError):
    """An answerer or callback gave back something the contract does not accept."""


def as_answer(value: Any, name: str) -> Answer | None:
    """What an answerer or callback gave back, as an Answer; None passes.

    Accepted: None (pass), an `Answer`, a `Decision`, a decision's string value
    (`"allowed-once"`, `"allowed-for-session"`, `"rejected"`, `"cancelled"`,
    `"unavailable"`, exactly), or a
    bool (True: allowed-once, False: rejected). Anything else raises InvalidDecision.
    """
    if value is None:
        return None
    if isinstance(value, Answer):
        answerer = value.answerer if isinstance(value.answerer, str) else name
        detail = value.detail if value.detail is None or isinstance(value.detail, str) else None
        decision = _decision(value.decision, name)
        if (decision, answerer, detail) == (value.decision, value.answerer, value.detail):
            return value
        return Answer(decision, answerer, detail, value.error)
    return Answer(_decision(value, name), name)


def _decision(value: Any, name: str) -> Decision:
    if isinstance(value, Decision):
        return value
    if isinstance(value, bool):
        return Decision.ALLOWED_ONCE if value else Decision.REJECTED
    if isinstance(value, str):
        for decision in Decision:
            if value == decision.value:
                return decision
    allowed = ", ".join(repr(decision.value) for decision in Decision)
    raise InvalidDecision(
        f"answerer {name!r} gave back {_cut(repr(value))}, which is not a decision (give "
        f"an Answer, a Decision, one of {allowed}, a bool, or None to pass)"
    )


def _cut(text: str) -> str:
    if len(text) <= ERROR_TEXT_LIMIT:
        return text
    return f"{text[:ERROR_TEXT_LIMIT]}... ({len(text)} characters)"


def _name_of(answerer: Any) -> str:
    try:
        name = answerer.name
    except Exception:
        name = None
    return name if isinstance(name, str) else type(answerer).__name__


def _failed(name: str, request: ApprovalRequest, error: Exception) -> Answer:
    """An answerer broke the contract: the ask is `unavailable`, and says why in the log."""
    if isinstance(error, InvalidDecision):
        why = str(error)
        logger.error(
            "approval for session %s: %s; the outcome is unavailable", request.session_id, why
        )
        detail = f"the approval answerer {name!r} gave no valid decision"
    else:
        why = _cut(f"answerer {name!r} raised {type(error).__name__}: {error}")
        logger.error(
            "approval for session %s: %s; the outcome is unavailable",
            request.session_id,
            why,
            exc_info=error,
        )
        detail = f"the approval answerer {name!r} failed"
    return Answer(Decision.UNAVAILABLE, name, detail, error=why)


async def ask_chain(answerers: Sequence[Answerer], request: ApprovalRequest) -> Answer:
    """Ask each answerer in order; the first decision wins; nobody => unavailable.

    Never raises an Exception: an answerer that raises one, or gives back something
    `as_answer` refuses, ends the chain with `unavailable` (later answerers are not
    asked: a broken answerer is not a pass). Cancellation still propagates.
    """
    ruled = rule_allowance(request)
    for answerer in answerers:
        if ruled is not None and not getattr(answerer, "rejects_only", False):
            # After the reject rules (the strictest wins), before anybody is asked.
            return ruled
        name = _name_of(answerer)
        try:
            answer = as_answer(await answerer.answer(request), name)
        except Exception as error:
            return _failed(name, request, error)
        if answer is not None:
            if answer.decision is Decision.ALLOWED_FOR_SESSION and not request.session_prefix:
                # Not offered (an escalation, or a prompt over several commands): once.
                return Answer(Decision.ALLOWED_ONCE, answer.answerer, answer.detail)
            return answer
    if ruled is not None:
        return ruled
    return Answer(Decision.UNAVAILABLE, NOBODY, "no answerer could take the request")


def rule_allowance(request: ApprovalRequest) -> Answer | None:
    """A command rule that allows this escalation approves it, naming itself; None when
    no rule does."""
    name = request.allowed_by_rule
    if name is None:
        return None
    return Answer(Decision.ALLOWED_ONCE, f"rule:{name}", f"allowed by the command rule {name!r}")


def policy_gate(request: ApprovalRequest) -> Answer | None:
    """The session's `never` policy answers `unavailable` at once, asking nobody."""
    if request.policy is ApprovalPolicy.NEVER:
        return Answer(Decision.UNAVAILABLE, "policy", "the approval policy is never")
    return None
