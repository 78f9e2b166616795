"""The ACP answerer: an escalation asked in the editor through `session/request_permission`.

It sits in the ApprovalActor's chain like any answerer (`open_harness(answerers=
[...])`). For a request from a session the ACP face serves it sends the client one
`session/request_permission` (mapped by `permission.py`) and waits for the first of:

- the client's answer: `allow_once` -> allowed-once, `reject_once` -> rejected,
  `cancelled` -> cancelled, and, where the deployment enables it, `allow_always` ->
  the session is switched (a knob event, through the preset machinery) and this
  call runs under the new mode; for a command rule's prompt, `allow_always` is
  "allow for this session" (allowed-for-session: a session rule in the log, never a
  switch; offered wherever the request says what it would allow);
- a `session/cancel` for that session -> cancelled;
- the configured time running out -> unavailable (so is a client that answers
  with an error, or with something that is not an answer).

For a session it does not serve it passes (returns None), so the rest of the chain
(or nobody: unavailable) decides.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

import attrs
import trio

from ..approval import Answer, ApprovalRequest, Decision
from ..errors import StockadeError
from ..reprs import fields_repr
from .permission import Outcome, ask_cwd, outcome, permission_params, tool_kind


class AskFailed(Exception):
    """The client could not be asked, or answered with a JSON-RPC error."""


class PermissionChannel(Protocol):
    """Sends one `session/request_permission` and returns the client's JSON result.

    Raises AskFailed when the client answers with an error or the connection is gone.
    """

    async def request_permission(self, params: dict[str, Any]) -> Any: ...


Switch = Callable[[ApprovalRequest], Awaitable[str]]


@attrs.define(eq=False)
class AskContext:
    """What the answerer knows of one ACP session while a turn runs.

    `calls` maps the turn's tool-call ids to (tool name, arguments); `switch` is the
    session's `allow_always` write path (None: the deployment offers no switch).
    `cancel()` is the turn's `session/cancel`: it resolves every open question
    `cancelled`, and any question asked later in the turn at once.
    """

    __repr__ = fields_repr

    session_id: str
    root: str | None
    calls: Mapping[str, tuple[str, Any]] = attrs.field(factory=dict)
    switch: Switch | None = None
    cancelled: trio.Event = attrs.field(factory=trio.Event)
    _open: set[trio.CancelScope] = attrs.field(factory=set, init=False)

    @property
    def asking(self) -> int:
        """How many questions are open now."""
        return len(self._open)

    def new_turn(self, calls: Mapping[str, tuple[str, Any]]) -> None:
        self.cancelled = trio.Event()
        self.calls = calls

    def cancel(self) -> None:
        self.cancelled.set()
        for scope in self._open:
            scope.cancel()


Directory = Callable[[str], AskContext | None]


@attrs.define(eq=False)
class AcpAnswerer:
    """Asks the ACP client. `directory` maps a stockade session id to its context;
    `channel` is bound once the connection exists. `timeout` None or 0: wait as long
    as the client takes (or until the session is cancelled)."""

    __repr__ = fields_repr

    directory: Directory
    channel: PermissionChannel | None = None
    timeout: float | None = 300.0
    allow_always: bool = False
    name: str = "acp"

    async def answer(self, request: ApprovalRequest) -> Answer | None:
        context = self.directory(request.session_id)
        if context is None or self.channel is None:
            return None
        if context.cancelled.is_set():
            return Answer(
                Decision.CANCELLED,
                self.name,
                "the turn was cancelled (session/cancel) before asking",
            )
        name, arguments = (None, None)
        if request.call_id is not None and request.call_id in context.calls:
            name, arguments = context.calls[request.call_id]
        offer_switch = self.allow_always and context.switch is not None
        params = permission_params(
            request,
            session_id=context.session_id,
            tool_call_id=request.call_id or f"ask-{uuid.uuid4().hex[:12]}",
            cwd=ask_cwd(context.root, arguments),
            allow_always=offer_switch,
            kind=tool_kind(name) if name is not None else "execute",
        )
        decided = await self._ask(context, params)
        if decided.switch:
            assert context.switch is not None
            try:
                done = await context.switch(request)
            except StockadeError as error:
                # The person allowed more than once; once is what can be honoured.
                return Answer(
                    Decision.ALLOWED_ONCE,
                    self.name,
                    f"allow_always chosen, but the session switch failed ({error}); allowed once",
                )
            return Answer(Decision.ALLOWED_ONCE, self.name, f"allow_always: {done}")
        return Answer(decided.decision, self.name, decided.detail)

    async def _ask(self, context: AskContext, params: dict[str, Any]) -> Outcome:
        """The client's answer, or why there is none.

        The wait is one cancel scope, cancelled by the session's `session/cancel` or
        by its deadline; a cancellation from outside (the caller stopped waiting)
        passes through unchanged, so the ApprovalActor audits it as the caller's.
        """
        channel = self.channel
        assert channel is not None
        with trio.CancelScope() as scope:
            if self.timeout:
                scope.deadline = trio.current_time() + self.timeout
            context._open.add(scope)
            try:
                answered = await channel.request_permission(params)
            except AskFailed as error:
                return Outcome(Decision.UNAVAILABLE, f"the client could not be asked: {error}")
            finally:
                context._open.discard(scope)
            return outcome(answered, params["options"])
        if context.cancelled.is_set():
            return Outcome(Decision.CANCELLED, "session/cancel while the question was open")
        return Outcome(Decision.UNAVAILABLE, f"no answer from the client within {self.timeout:g} s")
