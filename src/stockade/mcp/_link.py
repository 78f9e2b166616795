"""One MCP connection's stockade session, its tool calls in flight, and the answerer
that puts their escalations to the person on that connection.

Every `tools/call` becomes a `Call`: one `AgentSession.run_tool` in the link's
nursery, so the harness logs it, resolves its policy and asks the ApprovalActor
exactly as for any agent. When the chain reaches the `McpAnswerer`, the question is
posted on the call (an `Ask`) and the request handler that waits on the call takes
it to the client: as an `elicitation/create` request on the handshake era, or, on
2026-07-28 (where a server may not send requests), as an `InputRequiredResult` whose
retry carries the answer. Either way the answer goes back to the waiting call, the
one that holds the command the person was shown: a retry never runs what it carries
(it must carry the same tool and arguments, or it is refused) and nothing is
granted that the person did not approve. An ask nobody answers within the timeout
is `unavailable`.

Trio only; no MCP SDK here (the handlers in `server.py` do the protocol).
"""

from __future__ import annotations

import math
import secrets
import sys
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, Final

import attrs
import trio

from ..approval import Answer, ApprovalRequest, Decision
from ..harness import AgentSession
from ..reprs import fields_repr
from ..tools import ToolResult
from . import _ask
from ._tools import fingerprint

# The key of the one input request an escalation makes (2026-07-28 flow).
ASK_KEY: Final = "stockade_approval"
# How long a parked call's answer may still be collected after the call finished
# (the SDK seals request state for 600 s by default; after that it is refused anyway).
PARKED_TTL: Final = 600.0


class Unbound(Exception):
    """A retry that does not belong to a parked call (unknown, used, or other arguments)."""


class LinkClosed(Exception):
    """The connection's session is closing or closed: no new calls."""


@attrs.define(eq=False)
class Ask:
    """One question to the person: the request as the chain got it, and what the form
    shows beside it. Resolved once; later answers are ignored."""

    __repr__ = fields_repr

    request: ApprovalRequest
    shown: _ask.Shown
    answer: Answer | None = None
    _done: trio.Event = attrs.field(factory=trio.Event)

    @property
    def message(self) -> str:
        return _ask.ask_message(self.request, self.shown)

    def resolve(self, answer: Answer) -> bool:
        """Settle the ask; False (and nothing changes) when it was settled already."""
        if self.answer is not None:
            return False
        self.answer = answer
        self._done.set()
        return True

    async def wait(self) -> Answer:
        await self._done.wait()
        assert self.answer is not None
        return self.answer


@attrs.define(eq=False)
class Call:
    """One tool call in flight: its outcome is a result, a failure, or an open Ask."""

    __repr__ = fields_repr

    call_id: str
    name: str
    arguments: Any
    digest: str
    shown: _ask.Shown
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    result: ToolResult | None = None
    failure: str | None = None
    ask: Ask | None = None
    ask_taken: bool = False
    finished_at: float | None = None
    _changed: trio.Event = attrs.field(factory=trio.Event)

    @property
    def done(self) -> bool:
        return self.result is not None or self.failure is not None

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def post(self, ask: Ask) -> None:
        self.ask, self.ask_taken = ask, False
        self._notify()

    def clear(self, ask: Ask) -> None:
        if self.ask is ask:
            self.ask = None
            self._notify()

    def finish(self, result: ToolResult | None, failure: str | None = None) -> None:
        self.result, self.failure = result, failure
        self.finished_at = trio.current_time()
        self._notify()

    async def next(self) -> Ask | ToolResult | str:
        """Wait for the call's next outcome: its result, its failure (text), or an
        ask no handler has taken yet (the caller takes it)."""
        while True:
            changed = self._changed
            if self.result is not None:
                return self.result
            if self.failure is not None:
                return self.failure
            if self.ask is not None and not self.ask_taken and self.ask.answer is None:
                self.ask_taken = True
                return self.ask
            await changed.wait()

    def cancel(self) -> None:
        self.scope.cancel()


# Every call in flight on every link of one server, by call id: how the answerer
# finds the call an ApprovalRequest belongs to.
CallRegistry = dict[str, Call]


@attrs.define(eq=False)
class McpAnswerer:
    """The answerer that asks through the MCP client of the call being decided.

    It answers only for calls made through this server (it passes on any other
    request, so the chain goes on). `timeout`: seconds to wait for the person before
    the ask is `unavailable`.
    """

    __repr__ = fields_repr

    calls: CallRegistry = attrs.field(factory=dict)
    timeout: float = 300.0
    name: str = _ask.ANSWERER

    async def answer(self, request: ApprovalRequest) -> Answer | None:
        call = self.calls.get(request.call_id) if request.call_id is not None else None
        if call is None:
            return None
        ask = Ask(request=request, shown=call.shown)
        call.post(ask)
        try:
            with trio.move_on_after(self.timeout):
                return await ask.wait()
            ask.resolve(_ask.unavailable(_ask.timed_out(self.timeout)))
            assert ask.answer is not None
            return ask.answer
        finally:
            # An ask the caller stopped waiting for cannot be answered later.
            ask.resolve(Answer(Decision.CANCELLED, self.name, "the call was cancelled"))
            call.clear(ask)


@attrs.define(eq=False)
class Link:
    """One connection's session and the calls it runs. Open with `open_link`."""

    __repr__ = fields_repr

    session: AgentSession
    calls: CallRegistry
    _nursery: trio.Nursery | None = None
    _own: dict[str, Call] = attrs.field(factory=dict)
    _parked: dict[str, tuple[Call, Ask]] = attrs.field(factory=dict)
    # Undo questions awaiting their retry (2026-07-28): token -> (the call's digest, when
    # asked). Nothing runs meanwhile: the retry that answers does the undo.
    _undo_asks: dict[str, tuple[str, float]] = attrs.field(factory=dict)
    closing: bool = False
    _idle: trio.Event = attrs.field(factory=trio.Event)

    @property
    def id(self) -> str:
        return self.session.id

    @property
    def root(self) -> str:
        return self.session.cwd or self.session.harness.defaults.fallback_root

    @property
    def in_flight(self) -> int:
        return sum(1 for call in self._own.values() if not call.done)

    def start(self, name: str, arguments: Any) -> Call:
        """Run one tool call in the link's nursery; the caller waits on `call.next()`."""
        if self.closing or self._nursery is None:
            raise LinkClosed("this connection's stockade session is closing")
        shown = _ask.shown_for(name, arguments if isinstance(arguments, Mapping) else {}, self.root)
        call = Call(
            call_id=f"mcp-{uuid.uuid4().hex[:12]}",
            name=name,
            arguments=arguments,
            digest=fingerprint(name, arguments),
            shown=shown,
        )
        self.calls[call.call_id] = call
        self._own[call.call_id] = call
        self._idle = trio.Event()
        self._nursery.start_soon(self._run, call)
        return call

    async def _run(self, call: Call) -> None:
        try:
            with call.scope:
                result = await self.session.run_tool(
                    call.name, call.arguments, call_id=call.call_id
                )
                call.finish(result)
        except Exception as error:  # a bug or a broken log: the client gets an error
            print(
                f"stockade mcp: {call.name} call {call.call_id} failed: {error!r}", file=sys.stderr
            )
            call.finish(None, f"the tool call failed inside stockade: {error}")
        finally:
            if not call.done:
                call.finish(None, "the tool call was cancelled")
            self.calls.pop(call.call_id, None)
            self._own.pop(call.call_id, None)
            if not any(not c.done for c in self._own.values()):
                self._idle.set()

    # --- the 2026-07-28 flow: a parked call and its retry ---------------------------

    def park(self, call: Call, ask: Ask) -> str:
        """A one-use token for the retry that will carry the answer to `ask`."""
        self._sweep()
        token = secrets.token_urlsafe(18)
        self._parked[token] = (call, ask)
        return token

    def resume(self, token: str, name: str, arguments: Any) -> tuple[Call, Ask]:
        """The parked call a retry answers, and the ask it answers; the token is used up.

        Raises Unbound for an unknown or used token, or when the retry does not carry
        exactly the tool and arguments of the call that asked (that call keeps
        waiting for its own retry).
        """
        parked = self._parked.get(token)
        if parked is None:
            raise Unbound("the request state is unknown, expired or already used")
        call, ask = parked
        if fingerprint(name, arguments) != call.digest:
            raise Unbound(
                "the retry carries another tool or other arguments than the call that "
                "asked; an answer applies only to the exact call the person was shown"
            )
        del self._parked[token]
        return call, ask

    def park_undo(self, digest: str) -> str:
        """A one-use token for the retry that answers an undo question."""
        now = trio.current_time()
        for token, (_, asked) in list(self._undo_asks.items()):
            if now - asked > PARKED_TTL:
                del self._undo_asks[token]
        token = secrets.token_urlsafe(18)
        self._undo_asks[token] = (digest, now)
        return token

    def take_undo(self, token: str, digest: str) -> None:
        """Use up the token of an undo question; Unbound when it is unknown, used,
        expired, or the retry carries other arguments than the call that asked."""
        asked = self._undo_asks.get(token)
        if asked is None or trio.current_time() - asked[1] > PARKED_TTL:
            self._undo_asks.pop(token, None)
            raise Unbound("the request state is unknown, expired or already used")
        if asked[0] != digest:
            raise Unbound(
                "the retry carries other arguments than the undo that asked; an answer "
                "applies only to the exact undo the person was shown"
            )
        del self._undo_asks[token]

    def _sweep(self) -> None:
        now = trio.current_time()
        for token, (call, _) in list(self._parked.items()):
            if call.finished_at is not None and now - call.finished_at > PARKED_TTL:
                del self._parked[token]

    # --- ending ---------------------------------------------------------------------

    def cancel_asks(self, answer: Answer) -> None:
        """Settle every open question (the server is going away)."""
        for call in self._own.values():
            if call.ask is not None:
                call.ask.resolve(answer)

    async def drain(self, seconds: float) -> None:
        """Take no new calls, settle open questions as cancelled, and give running
        calls up to `seconds` to finish."""
        self.closing = True
        self.cancel_asks(Answer(Decision.CANCELLED, _ask.ANSWERER, _ask.SHUTTING_DOWN))
        if self.in_flight:
            with trio.move_on_after(seconds):
                await self._idle.wait()


@asynccontextmanager
async def open_link(session: AgentSession, calls: CallRegistry) -> AsyncIterator[Link]:
    """A link for `session`; leaving cancels its calls, kills its background jobs and
    closes the session (shielded: it runs even while the server is being cancelled)."""
    link = Link(session=session, calls=calls)
    try:
        async with trio.open_nursery() as nursery:
            link._nursery = nursery
            try:
                yield link
            finally:
                link.closing = True
                link.cancel_asks(Answer(Decision.CANCELLED, _ask.ANSWERER, _ask.SHUTTING_DOWN))
                nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            await close_session(session)


async def close_session(session: AgentSession) -> None:
    """Kill every job the session started, then close its log."""
    try:
        with trio.move_on_after(10):
            for job in await session.shell.list():
                try:
                    await session.shell.kill(job.id)
                except Exception as error:
                    print(f"stockade mcp: killing job {job.id}: {error!r}", file=sys.stderr)
    finally:
        await session.close()


def seconds(value: str) -> float:
    """A positive, finite number of seconds (argparse type)."""
    number = float(value)
    if not math.isfinite(number) or number <= 0:
        raise ValueError(value)
    return number
