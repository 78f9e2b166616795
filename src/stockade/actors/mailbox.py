"""Envelope, one-shot reply and `request(inbox, msg)`: how actors are asked things.

A reply is an `outcome.Outcome`, so an actor's error comes back as a value and is
re-raised, typed, in the caller's task.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeAlias, TypeVar

import attrs
import outcome
import trio

M = TypeVar("M")


@attrs.define(eq=False, repr=False)
class Envelope(Generic[M]):
    """A message in transit, with the one slot its reply goes into.

    The reply is an Event plus a slot rather than a channel: a request is the hot
    path of every actor, and a channel per request cost several times as much.
    """

    message: M
    _replied: trio.Event = attrs.field(factory=trio.Event)
    _result: outcome.Outcome[Any] | None = None
    # The actor-side work, cancelled when the caller stops waiting.
    _work: trio.CancelScope | None = None
    abandoned: bool = False

    def reply(self, result: outcome.Outcome[Any]) -> None:
        """Deliver `result` once; a caller that stopped waiting is simply not told."""
        if self._result is None:
            self._result = result
            self._replied.set()

    def abandon(self) -> None:
        """The caller stopped waiting: stop the work done for it."""
        self.abandoned = True
        if self._work is not None:
            self._work.cancel()

    def attach_work(self, scope: trio.CancelScope) -> None:
        self._work = scope
        if self.abandoned:
            scope.cancel()

    async def wait_reply(self) -> Any:
        await self._replied.wait()
        assert self._result is not None
        return self._result.unwrap()


# An actor's two ends, typed by the closed union of what it accepts (`messages`): a
# sender can put nothing else in, and the actor's dispatch `match` is checked (mypy)
# against exactly that union, down to its `assert_never`.
Inbox: TypeAlias = trio.MemorySendChannel[Envelope[M]]
Mailbox: TypeAlias = trio.MemoryReceiveChannel[Envelope[M]]


def open_inbox(buffer: int = 0) -> tuple[Inbox[M], Mailbox[M]]:
    """A bounded inbox; a full one makes senders wait rather than grow memory.

    `M` comes from what the ends are assigned to (`self._inbox: Inbox[ExecutorRequest]`).
    """
    return trio.open_memory_channel[Envelope[M]](buffer)


async def request(inbox: Inbox[M], message: M) -> Any:
    """Send `message` and wait for its reply, re-raising an error reply here.

    The reply's type depends on the message, not the inbox: each client names it.
    """
    envelope = Envelope(message)
    try:
        # Handed over at once when the actor waits for it (or the inbox has room):
        # `send` would add a trip through the event loop before the caller waits for
        # its reply, which is a schedule point of its own. A full inbox is waited on.
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            inbox.send_nowait(envelope)
        except trio.WouldBlock:
            await inbox.send(envelope)
        return await envelope.wait_reply()
    except trio.Cancelled:
        envelope.abandon()
        raise


async def answer(envelope: Envelope[M], handler: Callable[[], Awaitable[Any]]) -> None:
    """Run `handler` and reply with its value or its error; stop it if the caller leaves.

    Only `Exception`s travel back as values; `Cancelled` and other BaseExceptions
    propagate, so an actor shutting down never hands a caller its cancellation.
    """
    with trio.CancelScope() as work:
        envelope.attach_work(work)
        try:
            value = await handler()
        except Exception as error:
            envelope.reply(outcome.Error(error))
        else:
            envelope.reply(outcome.Value(value))


def answer_now(envelope: Envelope[M], handler: Callable[[], Any]) -> None:
    """Reply at once with what a synchronous `handler` returns or raises."""
    try:
        value = handler()
    except Exception as error:
        envelope.reply(outcome.Error(error))
    else:
        envelope.reply(outcome.Value(value))


async def serve_forever(
    mailbox: Mailbox[M],
    serve: Callable[[Envelope[M]], Awaitable[None]],
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    on_start: Callable[[trio.Nursery], None] | None = None,
    quick: Callable[[Envelope[M]], bool] | None = None,
) -> None:
    """An actor's inbox loop: one task per request, so a request that waits (a probe, a
    disk, a person) never blocks the next one.

    `quick` may answer a request that cannot wait right here (with `answer_now`) and
    return True: a task per request is most of a round trip's cost. `on_start`
    receives the request nursery, for an actor that starts work of its own there.
    """
    async with trio.open_nursery() as nursery, mailbox:
        if on_start is not None:
            on_start(nursery)
        task_status.started()
        while True:
            # What is already waiting is taken without a checkpoint each: under many
            # callers a scheduler pass per message was most of a quick request's cost.
            # It is bounded by the senders already blocked; an empty inbox waits.
            try:
                envelope = mailbox.receive_nowait()
            except trio.WouldBlock:
                try:
                    envelope = await mailbox.receive()
                except trio.EndOfChannel:
                    return
            except trio.EndOfChannel:
                return
            if quick is None or not quick(envelope):
                nursery.start_soon(serve, envelope)
