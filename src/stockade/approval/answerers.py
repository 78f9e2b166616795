"""Built-in answerers: prepend reject rules, callbacks (Trio or asyncio), the terminal,
and a scripted list for tests and the demo.

What a callback or a script gives back is read by `_chain.as_answer`; the chain turns
an answerer's exception or invalid value into `unavailable` (docs/embedding.md).
"""

from __future__ import annotations

import contextlib
import inspect
import os
import re
import termios
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import attrs
import trio

from ..reprs import fields_repr
from . import render
from ._chain import Answer, ApprovalRequest, Decision, as_answer


def _compile(pattern: str | re.Pattern[str]) -> re.Pattern[str]:
    # `converter=re.compile`, in a form mypy's attrs plugin can type (it leaves
    # re.compile's AnyStr unsolved, and then refuses every argument).
    return re.compile(pattern)


@attrs.frozen
class RejectRule:
    __repr__ = fields_repr
    pattern: re.Pattern[str] = attrs.field(converter=_compile)
    reason: str = "this command is never escalated by this deployment"


@attrs.frozen
class RejectRules:
    """Auto-reject commands matching a deployment's patterns, with the rule's reason."""

    __repr__ = fields_repr

    rules: tuple[RejectRule, ...] = ()
    name: str = "reject-rules"
    # It only ever rejects: a command rule's allowance is given after it (`_chain`).
    rejects_only: bool = True

    async def answer(self, request: ApprovalRequest) -> Answer | None:
        for rule in self.rules:
            if rule.pattern.search(request.command):
                return Answer(Decision.REJECTED, self.name, rule.reason)
        return None


# A callback: sync or async, `(request) -> Answer | Decision | str | bool | None`.
Decider = Callable[[ApprovalRequest], Any]
AsyncDecider = Callable[[ApprovalRequest], Awaitable[Any]]


@attrs.frozen
class CallbackAnswerer:
    """Any callable `(request) -> decision | None`, sync or async (Trio), as an answerer.

    It may return an `Answer`, a `Decision`, a decision's string value
    (`"allowed-once"`, `"allowed-for-session"`, `"rejected"`, `"cancelled"`,
    `"unavailable"`), a bool (True: allowed-once, False: rejected), or None to pass to
    the next answerer (`"allowed-for-session"` counts where a command rule's prompt
    offered it, and as `allowed-once` elsewhere). Raising, or
    returning anything else, makes the ask `unavailable` (logged; see `_chain`). A sync
    callback runs on the Trio thread: one that blocks (waits for a person) should be
    async, e.g. `await trio.to_thread.run_sync(ask_person, request)`.
    """

    __repr__ = fields_repr

    callback: Decider
    name: str = "callback"

    async def answer(self, request: ApprovalRequest) -> Answer | None:
        value = self.callback(request)
        if inspect.isawaitable(value):
            value = await value
        return as_answer(value, self.name)


@attrs.frozen
class AsyncioAnswerer:
    """An asyncio coroutine function as an answerer, through trio-asyncio.

    The harness must run inside `trio_asyncio.open_loop()`.
    """

    __repr__ = fields_repr

    callback: AsyncDecider
    name: str = "asyncio-callback"

    async def answer(self, request: ApprovalRequest) -> Answer | None:
        import trio_asyncio

        value = await trio_asyncio.aio_as_trio(self.callback)(request)
        return as_answer(value, self.name)


@attrs.define(eq=False)
class ScriptedAnswerer:
    """Decides from a list, in order; records every request it saw; passes when empty."""

    __repr__ = fields_repr

    decisions: list[Decision | str] = attrs.field(factory=list)
    name: str = "scripted"
    seen: list[ApprovalRequest] = attrs.field(factory=list)

    async def answer(self, request: ApprovalRequest) -> Answer | None:
        self.seen.append(request)
        if not self.decisions:
            return None
        return as_answer(self.decisions.pop(0), self.name)


class Tty:
    """The controlling terminal, opened unbuffered on one read-write descriptor.

    Not `open("/dev/tty", "r+")`: a text file in update mode needs a seekable
    stream, and a terminal is not one (io.UnsupportedOperation).
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def write(self, text: str) -> int:
        data = text.encode("utf-8", errors="replace")
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]
        return len(text)

    def flush(self) -> None:
        return None

    def discard_typeahead(self) -> None:
        """Drop keys typed before the question was shown: they cannot answer it."""
        with contextlib.suppress(OSError, termios.error):
            termios.tcflush(self.fd, termios.TCIFLUSH)

    def readline(self) -> str:
        line = bytearray()
        while True:
            byte = os.read(self.fd, 1)
            if not byte:
                break
            line += byte
            if byte == b"\n":
                break
        return line.decode("utf-8", errors="replace")

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Tty:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _open_terminal() -> Tty | None:
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return None
    if not os.isatty(fd):
        os.close(fd)
        return None
    return Tty(fd)


def render_prompt(request: ApprovalRequest, *, typed: bool = False) -> str:
    """The question as text (every hidden character escaped): `render.render_prompt`."""
    return render.render_prompt(request, typed=typed)


def terminal_decision(request: ApprovalRequest, reply: str) -> Decision:
    """What a line typed at the prompt decides: `y` allows once; `s` allows for the
    session where the prompt offered it (a command rule's, `render.session_choice`);
    anything else rejects."""
    typed = reply.strip().lower()
    if typed in (render.ALLOW_KEY, "yes"):
        return Decision.ALLOWED_ONCE
    if typed in (render.SESSION_KEY, "session") and render.session_choice(request) is not None:
        return Decision.ALLOWED_FOR_SESSION
    return Decision.REJECTED


@attrs.frozen
class TerminalAnswerer:
    """Shows the request on the controlling terminal and reads y/N (a command rule's
    prompt: y/s/N, `s` allowing for the session); no terminal => unavailable.

    The command and justification are rendered by `approval.render`: every character
    a terminal would hide or act on is shown escaped.
    """

    __repr__ = fields_repr

    name: str = "terminal"
    opener: Callable[[], Any | None] = _open_terminal
    # The person typed the command (`stockade run --ask`): the prompt offers a retry
    # of it instead of saying an agent asks.
    typed: bool = False

    async def answer(self, request: ApprovalRequest) -> Answer | None:
        terminal = self.opener()
        if terminal is None:
            return Answer(Decision.UNAVAILABLE, self.name, "no terminal to ask on")
        read = False

        def ask() -> str:
            nonlocal read
            with terminal:
                discard = getattr(terminal, "discard_typeahead", None)
                if discard is not None:
                    discard()
                # A real terminal also gets the reset that undoes hiding state earlier
                # output may have left (render.TERMINAL_RESET).
                shown = render.terminal_prompt if isinstance(terminal, Tty) else render_prompt
                terminal.write(shown(request, typed=self.typed))
                terminal.flush()
                line: str = terminal.readline()
                read = True
                return line

        try:
            reply = await trio.to_thread.run_sync(ask, abandon_on_cancel=True)
        except EOFError:
            reply = ""
        except trio.Cancelled:
            # Stopped while the prompt waits (Ctrl-C, a cancelled ask): end its line, so
            # what is printed next does not follow the `^C` the terminal echoed.
            if not read:
                with contextlib.suppress(OSError, ValueError):
                    terminal.write("\n")
                    terminal.flush()
            raise
        if not reply:
            return Answer(Decision.CANCELLED, self.name, "the terminal closed")
        return Answer(terminal_decision(request, reply), self.name)


def scripted(decisions: Iterable[Decision | str]) -> ScriptedAnswerer:
    return ScriptedAnswerer(decisions=list(decisions))
