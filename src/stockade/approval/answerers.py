"""Built-in answerers: prepend reject rules, callbacks (Trio or asyncio), the terminal,
and a scripted list for tests and the demo."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import attrs
import trio

from ._chain import Answer, ApprovalRequest, Decision


@attrs.frozen
class RejectRule:
    pattern: re.Pattern[str] = attrs.field(converter=re.compile)
    reason: str = "this command is never escalated by this deployment"


@attrs.frozen
class RejectRules:
    """Auto-reject commands matching a deployment's patterns, with the rule's reason."""

    rules: tuple[RejectRule, ...] = ()
    name: str = "reject-rules"

    async def answer(self, request: ApprovalRequest) -> Answer | None:
        for rule in self.rules:
            if rule.pattern.search(request.command):
                return Answer(Decision.REJECTED, self.name, rule.reason)
        return None


Decider = Callable[[ApprovalRequest], Awaitable[Any]]


def _as_answer(value: Any, name: str) -> Answer | None:
    if value is None or isinstance(value, Answer):
        return value
    return Answer(Decision(value.value if isinstance(value, Decision) else value), name)


@attrs.frozen
class CallbackAnswerer:
    """Any async callable `(request) -> decision | None`, on Trio.

    It may return an `Answer`, a `Decision`, a decision string, or None to pass.
    """

    callback: Decider
    name: str = "callback"

    async def answer(self, request: ApprovalRequest) -> Answer | None:
        return _as_answer(await self.callback(request), self.name)


@attrs.frozen
class AsyncioAnswerer:
    """An asyncio coroutine function as an answerer, through trio-asyncio.

    The harness must run inside `trio_asyncio.open_loop()`.
    """

    callback: Decider
    name: str = "asyncio-callback"

    async def answer(self, request: ApprovalRequest) -> Answer | None:
        import trio_asyncio

        value = await trio_asyncio.aio_as_trio(self.callback)(request)
        return _as_answer(value, self.name)


@attrs.define(eq=False)
class ScriptedAnswerer:
    """Decides from a list, in order; records every request it saw; passes when empty."""

    decisions: list[Decision | str] = attrs.field(factory=list)
    name: str = "scripted"
    seen: list[ApprovalRequest] = attrs.field(factory=list)

    async def answer(self, request: ApprovalRequest) -> Answer | None:
        self.seen.append(request)
        if not self.decisions:
            return None
        return _as_answer(self.decisions.pop(0), self.name)


def _open_terminal() -> Any | None:
    try:
        return open("/dev/tty", "r+", encoding="utf-8", errors="replace")
    except OSError:
        return None


def render_prompt(request: ApprovalRequest) -> str:
    return (
        "\nstockade: the agent asks to run a command with wider file access, once.\n"
        f"  command:   {request.command}\n"
        f"  why:       {request.justification}\n"
        f"  mode:      {request.current_mode.value} -> {request.requested_mode.value}\n"
        "Allow this command once? [y/N] "
    )


@attrs.frozen
class TerminalAnswerer:
    """Shows the request on the controlling terminal and reads y/N; no terminal => unavailable."""

    name: str = "terminal"
    opener: Callable[[], Any | None] = _open_terminal

    async def answer(self, request: ApprovalRequest) -> Answer | None:
        terminal = self.opener()
        if terminal is None:
            return Answer(Decision.UNAVAILABLE, self.name, "no terminal to ask on")

        def ask() -> str:
            with terminal:
                terminal.write(render_prompt(request))
                terminal.flush()
                return terminal.readline()

        try:
            reply = await trio.to_thread.run_sync(ask, abandon_on_cancel=True)
        except EOFError:
            reply = ""
        if not reply:
            return Answer(Decision.CANCELLED, self.name, "the terminal closed")
        if reply.strip().lower() in ("y", "yes"):
            return Answer(Decision.ALLOWED_ONCE, self.name)
        return Answer(Decision.REJECTED, self.name)


def scripted(decisions: Iterable[Decision | str]) -> ScriptedAnswerer:
    return ScriptedAnswerer(decisions=list(decisions))
