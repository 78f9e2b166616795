"""Envelope, one-shot reply and `request(inbox, msg)`: how actors are asked things.

A reply is an `outcome.Outcome`, so an actor's error comes back as a value and is
re-raised, typed, in the caller's task.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

import attrs
import outcome
import trio

M = TypeVar("M")


@attrs.frozen
class Envelope(Generic[M]):
    message: M
    reply_to: trio.MemorySendChannel[outcome.Outcome[Any]]
    # Set when the caller stops waiting (cancelled), so the actor stops the work.
    abandoned: trio.Event = attrs.field(factory=trio.Event)

    def reply(self, result: outcome.Outcome[Any]) -> None:
        """Deliver `result`; a caller that stopped waiting (cancelled) is ignored."""
        try:
            self.reply_to.send_nowait(result)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            self.reply_to.close()


Inbox = trio.MemorySendChannel[Envelope[Any]]


def open_inbox(
    buffer: int = 0,
) -> tuple[trio.MemorySendChannel[Envelope[Any]], trio.MemoryReceiveChannel[Envelope[Any]]]:
    """A bounded inbox; a full one makes senders wait rather than grow memory."""
    return trio.open_memory_channel[Envelope[Any]](buffer)


async def request(inbox: trio.MemorySendChannel[Envelope[Any]], message: object) -> Any:
    """Send `message` and wait for its reply, re-raising an error reply here."""
    send, receive = trio.open_memory_channel[outcome.Outcome[Any]](1)
    envelope = Envelope(message, send)
    try:
        with receive:
            await inbox.send(envelope)
            result = await receive.receive()
    except BaseException:
        envelope.abandoned.set()
        raise
    return result.unwrap()


async def answer(envelope: Envelope[Any], handler: Callable[[], Awaitable[Any]]) -> None:
    """Run `handler` and reply with its value or its error; stop it if the caller leaves.

    Only `Exception`s travel back as values; `Cancelled` and other BaseExceptions
    propagate, so an actor shutting down never hands a caller its cancellation.
    """

    async with trio.open_nursery() as nursery:

        async def stop_when_abandoned() -> None:
            await envelope.abandoned.wait()
            nursery.cancel_scope.cancel()

        nursery.start_soon(stop_when_abandoned)
        try:
            value = await handler()
        except Exception as error:
            envelope.reply(outcome.Error(error))
        else:
            envelope.reply(outcome.Value(value))
        nursery.cancel_scope.cancel()


async def serve_forever(
    mailbox: trio.MemoryReceiveChannel[Envelope[Any]],
    serve: Callable[[Envelope[Any]], Awaitable[None]],
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    on_start: Callable[[trio.Nursery], None] | None = None,
) -> None:
    """An actor's inbox loop: one task per request, so a request that waits (a probe, a
    disk, a person) never blocks the next one. `on_start` receives the request
    nursery, for an actor that also starts work of its own there (background jobs)."""
    async with trio.open_nursery() as nursery, mailbox:
        if on_start is not None:
            on_start(nursery)
        task_status.started()
        async for envelope in mailbox:
            nursery.start_soon(serve, envelope)
