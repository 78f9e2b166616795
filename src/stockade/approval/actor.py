"""ApprovalActor: asks the answerer chain, one task per ask, and audits each ask.

Concurrent asks from different sessions wait independently; a caller that stops
waiting cancels its ask, which is audited as `cancelled`.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, assert_never

import attrs
import msgspec
import trio

from ..actors import Envelope, Inbox, Mailbox, answer, open_inbox, request, running, serve_forever
from ..events import SessionEvent
from ..messages import ApprovalInbox, AskApproval
from ..reprs import fields_repr
from ._chain import Answer, Answerer, ApprovalRequest, Decision, ask_chain, policy_gate
from .events import ApprovalAnswered, ApprovalAsked

Audit = Callable[[str, SessionEvent], Awaitable[Any]]


async def _no_audit(_session_id: str, _event: SessionEvent) -> None:
    return None


@attrs.define(eq=False)
class ApprovalActor:
    __repr__ = fields_repr
    answerers: Sequence[Answerer] = ()
    # Appends an audit event to that session's log (the harness wires the log in).
    audit: Audit = _no_audit
    _inbox: Inbox[ApprovalInbox] = attrs.field(init=False)
    _mailbox: Mailbox[ApprovalInbox] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._inbox, self._mailbox = open_inbox()

    @property
    def client(self) -> ApprovalClient:
        return ApprovalClient(self._inbox)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        await serve_forever(self._mailbox, self._serve, task_status=task_status)

    async def _serve(self, envelope: Envelope[ApprovalInbox]) -> None:
        message = envelope.message
        match message:
            case AskApproval(request=ask):
                await answer(envelope, lambda: self._ask(ask))
            case _:
                assert_never(message)

    async def _ask(self, ask: ApprovalRequest) -> Answer:
        ask_id = uuid.uuid4().hex[:12]
        await self.audit(
            ask.session_id,
            ApprovalAsked(
                ask_id=ask_id,
                command=ask.command,
                justification=ask.justification,
                current_mode=ask.current_mode.value,
                requested_mode=ask.requested_mode.value,
                reason=ask.reason,
                call_id=ask.call_id,
                with_network=ask.with_network,
                network_destinations=ask.network_destinations,
                rule=ask.rule,
                session_prefix=ask.session_prefix,
                allowed_by_rule=ask.allowed_by_rule,
            ),
        )
        try:
            # `never` asks nobody, but the audit still records the refused request.
            decided = policy_gate(ask) or await ask_chain(self.answerers, ask)
        except trio.Cancelled:
            with trio.CancelScope(shield=True):
                await self._answered(ask, ask_id, Answer(Decision.CANCELLED, "caller", None))
            raise
        # Audited even when the caller stops waiting just as the answer comes in.
        with trio.CancelScope(shield=True):
            await self._answered(ask, ask_id, decided)
        return decided

    async def _answered(self, ask: ApprovalRequest, ask_id: str, decided: Answer) -> None:
        event = ApprovalAnswered(
            ask_id=ask_id,
            decision=decided.decision.value,
            answerer=decided.answerer,
            detail=decided.detail,
            error=decided.error,
        )
        await self.audit(ask.session_id, event)


class ApprovalClient(msgspec.Struct, frozen=True):
    inbox: Inbox[ApprovalInbox]

    async def ask(self, ask: ApprovalRequest) -> Answer:
        decided: Answer = await request(self.inbox, AskApproval(ask))
        return decided


@asynccontextmanager
async def open_approval(
    answerers: Sequence[Answerer] = (), audit: Audit = _no_audit
) -> AsyncIterator[ApprovalClient]:
    actor = ApprovalActor(answerers=answerers, audit=audit)
    async with running(actor.run):
        yield actor.client
