"""SessionLogActor: one task with a mailbox that owns every open session log.

Each open session has one writer task. Appends queue on it; the writer takes
everything queued, stamps seq and ts, and commits the group with one write and one
fsync in a worker thread (its own thread limiter, so a slow disk under one session
never holds up another), then acknowledges each append. An acknowledged event is
durable; reads see only acknowledged events.

Appends and reads never wait in the actor, so its inbox loop handles them itself
rather than starting a task for each: an append is checked and put on its
session's queue (a task waits for room only when the queue is full), a read is
answered with the log's current view, which the writer replaces in the same step
that commits a batch. Opens and closes wait (on a thread, on a drain) and get a
task each.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import assert_never

import attrs
import msgspec
import outcome
import trio

from ..actors import (
    Envelope,
    Inbox,
    Mailbox,
    answer,
    answer_now,
    open_inbox,
    request,
    serve_forever,
)
from ..errors import StockadeError
from ..events import (
    AppendConflict,
    CommittedEvents,
    EventRegistry,
    EventView,
    SessionEvent,
    UnencodableEvent,
    UnregisteredEvent,
)
from ..messages import (
    AppendEvents,
    CloseLog,
    FindLog,
    LogFound,
    LogOpened,
    OpenLog,
    ReadLog,
    SessionLogRequest,
)
from ..reprs import fields_repr
from .stores import OpenedLog, SessionStore


class SessionNotOpen(StockadeError):
    """A read or append for a session that is not open in this log actor."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id!r} is not open; open (or resume) it first")
        self.session_id = session_id


class LogWriteFailed(StockadeError):
    """A commit failed; what reached the disk is unknown, so the session refuses appends.

    Close the session and open it again: the open re-reads and recovers the log.
    """


class _Pending:
    """One append on its session's queue."""

    __slots__ = ("after_seq", "envelope", "events")

    def __init__(
        self,
        events: tuple[SessionEvent, ...],
        after_seq: int | None,
        envelope: Envelope[SessionLogRequest],
    ) -> None:
        self.events = events
        self.after_seq = after_seq
        self.envelope = envelope


@attrs.define(eq=False)
class _Log:
    __repr__ = fields_repr
    session_id: str
    # The writer's queue: one batch's worth, so the inbox loop rarely has to wait.
    queue_size: int = 1024
    refs: int = 0
    opened: OpenedLog | None = None
    committed: CommittedEvents = attrs.field(factory=CommittedEvents)
    failed: BaseException | None = None
    # Appends waiting (each in a task) for room in a full queue; while any wait,
    # later ones queue behind them rather than overtake.
    waiting: int = 0
    ready: trio.Event = attrs.field(factory=trio.Event)
    closed: trio.Event = attrs.field(factory=trio.Event)
    limiter: trio.CapacityLimiter = attrs.field(factory=lambda: trio.CapacityLimiter(1))
    send: trio.MemorySendChannel[_Pending] = attrs.field(init=False)
    receive: trio.MemoryReceiveChannel[_Pending] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.send, self.receive = trio.open_memory_channel[_Pending](self.queue_size)


@attrs.define(eq=False)
class SessionLogActor:
    __repr__ = fields_repr
    store: SessionStore
    # Injectable so tests can pin timestamps.
    clock: Callable[[], float] = time.time
    max_batch: int = 1024
    # Close the store (a database's connections) once every log is released: for a
    # store made for this actor alone (the harness's), never for one shared with others.
    owns_store: bool = False
    _logs: dict[str, _Log] = attrs.field(factory=dict, init=False)
    _closing: dict[str, trio.Event] = attrs.field(factory=dict, init=False)
    _nursery: trio.Nursery | None = attrs.field(default=None, init=False)
    _inbox: Inbox[SessionLogRequest] = attrs.field(init=False)
    _mailbox: Mailbox[SessionLogRequest] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._inbox, self._mailbox = open_inbox()

    @property
    def client(self) -> SessionLogClient:
        return SessionLogClient(self._inbox, self.store.registry)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        # Appends and reads are handled in the inbox loop (`_quick`); opens and closes
        # get a task each, so a session waiting on its disk never blocks another.
        try:
            await serve_forever(
                self._mailbox,
                self._serve,
                task_status=task_status,
                on_start=self._adopt_nursery,
                quick=self._quick,
            )
        finally:
            # Every writer task has released its log by now (they ran in that nursery).
            close = getattr(self.store, "close", None)
            if self.owns_store and close is not None:
                with trio.CancelScope(shield=True):
                    await trio.to_thread.run_sync(close)

    def _adopt_nursery(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery

    def _quick(self, envelope: Envelope[SessionLogRequest]) -> bool:
        message = envelope.message
        if isinstance(message, AppendEvents):
            self._enqueue(envelope, message)
            return True
        if isinstance(message, ReadLog):
            answer_now(envelope, lambda: self._read(message.session_id))
            return True
        return False

    async def _serve(self, envelope: Envelope[SessionLogRequest]) -> None:
        message = envelope.message
        match message:
            case OpenLog():
                await answer(envelope, lambda: self._open(message.session_id))
            case AppendEvents() | ReadLog():
                self._quick(envelope)
            case CloseLog():
                await answer(envelope, lambda: self._close(message.session_id))
            case FindLog():
                await answer(envelope, lambda: self._find(message.session_id))
            case _:
                assert_never(message)

    # --- open / close -----------------------------------------------------------------

    async def _open(self, session_id: str) -> LogOpened:
        while True:
            closing = self._closing.get(session_id)
            if closing is not None:
                await closing.wait()
                continue
            log = self._logs.get(session_id)
            if log is None:
                break
            await log.ready.wait()
            if self._logs.get(session_id) is log and log.opened is not None:
                log.refs += 1
                return self._opened(log)
            # It failed to open, or closed meanwhile: look again.
        log = _Log(session_id, queue_size=self.max_batch)
        self._logs[session_id] = log
        assert self._nursery is not None
        try:
            await self._nursery.start(self._run_log, log)
        except BaseException:
            if self._logs.get(session_id) is log:
                del self._logs[session_id]
            raise
        finally:
            log.ready.set()
        log.refs += 1
        return self._opened(log)

    def _opened(self, log: _Log) -> LogOpened:
        assert log.opened is not None
        return LogOpened(
            session_id=log.session_id,
            location=log.opened.location,
            events=log.committed.view,
            torn_lines_cut=0 if log.opened.torn is None else 1,
        )

    async def _close(self, session_id: str) -> None:
        log = self._logs.get(session_id)
        if log is None or log.opened is None:
            return
        log.refs -= 1
        if log.refs > 0:
            return
        del self._logs[session_id]
        self._closing[session_id] = log.closed
        try:
            log.send.close()  # the writer commits what it holds, then releases the log
            await log.closed.wait()
        finally:
            if self._closing.get(session_id) is log.closed:
                del self._closing[session_id]

    # --- the writer -------------------------------------------------------------------

    async def _run_log(self, log: _Log, *, task_status: trio.TaskStatus[None]) -> None:
        opened, committed = await trio.to_thread.run_sync(
            self._open_store, log.session_id, limiter=log.limiter
        )
        try:
            log.opened = opened
            log.committed = committed
            task_status.started()
            async with log.receive:
                while True:
                    try:
                        batch = [await log.receive.receive()]
                    except trio.EndOfChannel:
                        break
                    while len(batch) < self.max_batch:
                        try:
                            batch.append(log.receive.receive_nowait())
                        except (trio.WouldBlock, trio.EndOfChannel):
                            break
                    await self._commit(log, batch)
        finally:
            try:
                with trio.CancelScope(shield=True):
                    await trio.to_thread.run_sync(opened.handle.close, limiter=log.limiter)
            finally:
                log.closed.set()

    async def _find(self, session_id: str) -> LogFound:
        def find() -> LogFound:
            exists = self.store.exists(session_id)
            return LogFound(session_id, exists, self.store.location_of(session_id))

        # In a worker thread: a store's question may be a database's round trip.
        return await trio.to_thread.run_sync(find)

    def _open_store(self, session_id: str) -> tuple[OpenedLog, CommittedEvents]:
        # In the worker thread: indexing a long log's events is no work for the loop.
        opened = self.store.open(session_id)
        try:
            return opened, CommittedEvents(opened.events)
        except BaseException:
            opened.handle.close()
            raise

    async def _commit(self, log: _Log, batch: list[_Pending]) -> None:
        assert log.opened is not None
        if log.failed is not None:
            for pending in batch:
                pending.envelope.reply(outcome.Error(self._failed_error(log)))
            return
        now = self.clock()
        next_seq = log.committed.last_seq + 1
        staged: list[SessionEvent] = []
        accepted: list[tuple[_Pending, tuple[SessionEvent, ...]]] = []
        for pending in batch:
            if pending.after_seq is not None and pending.after_seq != next_seq - 1:
                conflict = AppendConflict(pending.after_seq, next_seq - 1)
                pending.envelope.reply(outcome.Error(conflict))
                continue
            stamped = tuple(
                msgspec.structs.replace(event, seq=next_seq + index, ts=now)
                for index, event in enumerate(pending.events)
            )
            next_seq += len(stamped)
            staged.extend(stamped)
            accepted.append((pending, stamped))
        if not staged:
            return
        try:
            await trio.to_thread.run_sync(log.opened.handle.append, staged, limiter=log.limiter)
        except Exception as error:
            log.failed = error
            for pending, _ in accepted:
                pending.envelope.reply(outcome.Error(self._failed_error(log)))
            return
        log.committed.extend(staged)  # reads see the whole batch from here on, or none of it
        for pending, stamped in accepted:
            pending.envelope.reply(outcome.Value(stamped))

    def _failed_error(self, log: _Log) -> LogWriteFailed:
        error = LogWriteFailed(
            f"session {log.session_id!r}: writing its log failed ({log.failed!r}); the session "
            "refuses further appends. Close it and open it again to recover the log."
        )
        error.__cause__ = log.failed
        return error

    # --- append / read ----------------------------------------------------------------

    def _enqueue(self, envelope: Envelope[SessionLogRequest], message: AppendEvents) -> None:
        log = self._logs.get(message.session_id)
        if log is None or log.opened is None:
            envelope.reply(outcome.Error(SessionNotOpen(message.session_id)))
            return
        if log.failed is not None:
            envelope.reply(outcome.Error(self._failed_error(log)))
            return
        try:
            self.store.registry.check(message.events)
            # Refused alone, before it can fail a group commit and with it the session;
            # kept as it reads back, so memory and disk agree.
            events = self.store.registry.as_written(message.events)
        except (UnregisteredEvent, UnencodableEvent) as error:
            envelope.reply(outcome.Error(error))
            return
        if not events:
            envelope.reply(outcome.Value(()))
            return
        pending = _Pending(events, message.after_seq, envelope)
        if not log.waiting:
            try:
                log.send.send_nowait(pending)
            except trio.WouldBlock:
                pass
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                envelope.reply(outcome.Error(SessionNotOpen(message.session_id)))
                return
            else:
                return
        # The queue is full: wait for room in a task of its own, in arrival order.
        log.waiting += 1
        assert self._nursery is not None
        self._nursery.start_soon(self._enqueue_when_room, log, pending)

    async def _enqueue_when_room(self, log: _Log, pending: _Pending) -> None:
        try:
            await log.send.send(pending)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pending.envelope.reply(outcome.Error(SessionNotOpen(log.session_id)))
        finally:
            log.waiting -= 1

    def _read(self, session_id: str) -> EventView:
        log = self._logs.get(session_id)
        if log is None or log.opened is None:
            raise SessionNotOpen(session_id)
        return log.committed.view


class SessionLogClient(msgspec.Struct, frozen=True):
    """What callers hold: open, append, read and close session logs by id."""

    inbox: Inbox[SessionLogRequest]
    registry: EventRegistry

    async def open(self, session_id: str) -> LogOpened:
        result: LogOpened = await request(self.inbox, OpenLog(session_id=session_id))
        return result

    async def append(
        self, session_id: str, *events: SessionEvent, after_seq: int | None = None
    ) -> tuple[SessionEvent, ...]:
        """Append `events` contiguously and durably; returns them stamped with seq and ts.

        With `after_seq`, the append happens only if the log still ends at that seq
        (else AppendConflict).
        """
        message = AppendEvents(session_id=session_id, events=events, after_seq=after_seq)
        result: tuple[SessionEvent, ...] = await request(self.inbox, message)
        return result

    async def read(self, session_id: str) -> EventView:
        """Every committed event, in seq order: an immutable view shared with the log
        (a `Sequence` that compares equal to the tuple of its events), so it costs the
        same however long the session is. Events committed later are not in it."""
        result: EventView = await request(self.inbox, ReadLog(session_id=session_id))
        return result

    async def close(self, session_id: str) -> None:
        await request(self.inbox, CloseLog(session_id=session_id))

    async def find(self, session_id: str) -> LogFound:
        """Whether the store holds `session_id`'s log, and where it is (or would be),
        without opening it: InvalidSessionId for an id that cannot name a log."""
        result: LogFound = await request(self.inbox, FindLog(session_id=session_id))
        return result


@asynccontextmanager
async def open_session_log(
    store: SessionStore, *, clock: Callable[[], float] = time.time
) -> AsyncIterator[SessionLogClient]:
    """Run a SessionLogActor for the duration of the block (the harness does the same).

    Leaving the block releases every log still open.
    """
    actor = SessionLogActor(store=store, clock=clock)
    async with trio.open_nursery() as nursery:
        await nursery.start(actor.run)
        yield actor.client
        nursery.cancel_scope.cancel()
