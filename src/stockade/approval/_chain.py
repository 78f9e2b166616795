"""The answerer protocol and the chain that asks them in order.

An answerer decides (`allowed-once`, `rejected`, `cancelled`, `unavailable`) or passes
(None); nobody deciding means `unavailable`.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import msgspec

from ..vocab import ApprovalPolicy, SandboxMode


class Decision(enum.Enum):
    ALLOWED_ONCE = "allowed-once"
    REJECTED = "rejected"
    CANCELLED = "cancelled"
    UNAVAILABLE = "unavailable"


class ApprovalRequest(msgspec.Struct, frozen=True):
    """One escalation to decide: this command, once, under `requested_mode`.

    `policy` is the session's effective approval policy, resolved by the caller.
    `with_network`: the request is for network access for this one run (the mode
    stays: `requested_mode` equals `current_mode`); show the person that it is.
    """

    session_id: str
    command: str
    justification: str
    current_mode: SandboxMode
    requested_mode: SandboxMode
    policy: ApprovalPolicy
    reason: str
    call_id: str | None = None
    with_network: bool = False


class Answer(msgspec.Struct, frozen=True):
    decision: Decision
    answerer: str
    detail: str | None = None


@runtime_checkable
class Answerer(Protocol):
    """Something that may decide an approval request, or pass (return None)."""

    @property
    def name(self) -> str: ...

    async def answer(self, request: ApprovalRequest) -> Answer | None: ...


NOBODY = "nobody"


async def ask_chain(answerers: Sequence[Answerer], request: ApprovalRequest) -> Answer:
    """Ask each answerer in order; the first decision wins; nobody => unavailable."""
    for answerer in answerers:
        answer = await answerer.answer(request)
        if answer is not None:
            return answer
    return Answer(Decision.UNAVAILABLE, NOBODY, "no answerer could take the request")


def policy_gate(request: ApprovalRequest) -> Answer | None:
    """The session's `never` policy answers `unavailable` at once, asking nobody."""
    if request.policy is ApprovalPolicy.NEVER:
        return Answer(Decision.UNAVAILABLE, "policy", "the approval policy is never")
    return None
