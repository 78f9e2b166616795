"""The SessionLogActor: group commit, ordering, conditional appends, isolation, release."""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from stockade.events import AppendConflict, EventView, LogCorrupt, UnregisteredEvent
from stockade.sessionlog import (
    JsonlStore,
    LogWriteFailed,
    MemoryStore,
    SessionLocked,
    SessionLogActor,
    SessionLogClient,
    SessionNotOpen,
    open_session_log,
    scan_log,
)

from ._helpers import TEST_EVENTS, CountingFsync, Note


def read_file(path: Path) -> list[Note]:
    events = scan_log(path.read_bytes(), str(path), TEST_EVENTS).events
    assert all(isinstance(e, Note) for e in events)
    return list(events)  # type: ignore[arg-type]


async def test_ten_thousand_concurrent_appends_commit_in_groups(tmp_path: Path) -> None:
    fsync = CountingFsync(latency=0.005)  # a fast SSD's flush
    store = JsonlStore(tmp_path, registry=TEST_EVENTS, fsync=fsync)
    acked: dict[int, int] = {}
    async with open_session_log(store) as log:
        await log.open("s")
        before = fsync.count

        async def one(n: int) -> None:
            (event,) = await log.append("s", Note(n=n))
            acked[n] = event.seq

        async with trio.open_nursery() as nursery:
            for n in range(10_000):
                nursery.start_soon(one, n)
        commits = fsync.count - before
    assert sorted(acked.values()) == list(range(1, 10_001))
    on_disk = read_file(tmp_path / "s.jsonl")
    # Each append is on disk at exactly the seq it was acknowledged with.
    assert {event.n: event.seq for event in on_disk} == acked
    print(f"10000 appends, {commits} fsyncs")
    # Far fewer fsyncs than appends; the exact count depends on the machine's load.
    assert commits * 10 <= 10_000, commits


async def test_each_writer_keeps_its_own_order(tmp_path: Path) -> None:
    async with open_session_log(JsonlStore(tmp_path, registry=TEST_EVENTS)) as log:
        await log.open("s")

        async def writer(k: int) -> None:
            for i in range(50):
                await log.append("s", Note(n=k * 1000 + i))

        async def batch_writer() -> None:
            for i in range(20):
                stamped = await log.append("s", *(Note(n=-1 - (i * 10 + j)) for j in range(5)))
                assert [e.seq for e in stamped] == list(range(stamped[0].seq, stamped[0].seq + 5))

        async with trio.open_nursery() as nursery:
            for k in range(20):
                nursery.start_soon(writer, k)
            nursery.start_soon(batch_writer)
        events = await log.read("s")
    assert [e.seq for e in events] == list(range(1, 1101))
    for k in range(20):
        mine = [e.n for e in events if isinstance(e, Note) and e.n >= 0 and e.n // 1000 == k]
        assert mine == [k * 1000 + i for i in range(50)]


async def test_a_conditional_append_fails_when_the_log_moved_on() -> None:
    async with open_session_log(MemoryStore(registry=TEST_EVENTS)) as log:
        await log.open("s")
        await log.append("s", Note(n=1), after_seq=0)
        with pytest.raises(AppendConflict, match="end at seq 0, but it ends at 1"):
            await log.append("s", Note(n=2), after_seq=0)
        await log.append("s", Note(n=2), after_seq=1)
        assert [e.seq for e in await log.read("s")] == [1, 2]


async def test_an_unregistered_event_is_refused_and_nothing_is_written() -> None:
    store = MemoryStore()  # built-in registry: no test/note
    async with open_session_log(store) as log:
        await log.open("s")
        with pytest.raises(UnregisteredEvent, match="Note is not a registered session event"):
            await log.append("s", Note(n=1))
        assert await log.read("s") == ()
    assert store.files["s"] == b""


async def test_reads_and_appends_need_an_open_session() -> None:
    async with open_session_log(MemoryStore(registry=TEST_EVENTS)) as log:
        with pytest.raises(SessionNotOpen, match="'s' is not open"):
            await log.read("s")
        with pytest.raises(SessionNotOpen):
            await log.append("s", Note(n=1))
        await log.open("s")
        await log.close("s")
        with pytest.raises(SessionNotOpen):
            await log.append("s", Note(n=1))


async def test_opens_are_counted_and_the_last_close_releases_the_lock(tmp_path: Path) -> None:
    async with open_session_log(JsonlStore(tmp_path, registry=TEST_EVENTS)) as log:
        await log.open("s")
        await log.open("s")
        await log.close("s")
        await log.append("s", Note(n=1))
        with pytest.raises(SessionLocked):
            JsonlStore(tmp_path, registry=TEST_EVENTS).open("s")
        await log.close("s")
        JsonlStore(tmp_path, registry=TEST_EVENTS).open("s").handle.close()
        opened = await log.open("s")  # reopen after close, in the same actor
        assert [e.seq for e in opened.events] == [1]


async def test_leaving_the_block_releases_every_log(tmp_path: Path) -> None:
    async with open_session_log(JsonlStore(tmp_path, registry=TEST_EVENTS)) as log:
        await log.open("a")
        await log.open("b")
        await log.append("a", Note(n=1))
    for name in ("a", "b"):
        JsonlStore(tmp_path, registry=TEST_EVENTS).open(name).handle.close()


async def test_a_slow_disk_under_one_session_never_blocks_another(tmp_path: Path) -> None:
    entered, release = threading.Event(), threading.Event()

    def fsync(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").endswith("slow.jsonl"):
            entered.set()
            release.wait(10)
        os.fsync(fd)

    async with open_session_log(JsonlStore(tmp_path, registry=TEST_EVENTS, fsync=fsync)) as log:
        await log.open("slow")
        await log.open("fast")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(log.append, "slow", Note(n=1))
            await trio.to_thread.run_sync(entered.wait, 5)
            with trio.fail_after(5):
                for n in range(50):
                    await log.append("fast", Note(n=n))
                assert len(await log.read("fast")) == 50
                assert await log.read("slow") == ()  # not acknowledged, so not readable
            release.set()
        assert len(await log.read("slow")) == 1


async def test_a_failed_commit_refuses_later_appends_until_reopened(tmp_path: Path) -> None:
    broken = threading.Event()

    def fsync(fd: int) -> None:
        if broken.is_set():
            raise OSError(28, "No space left on device")
        os.fsync(fd)

    async with open_session_log(JsonlStore(tmp_path, registry=TEST_EVENTS, fsync=fsync)) as log:
        await log.open("s")
        await log.append("s", Note(n=1))
        broken.set()
        with pytest.raises(LogWriteFailed, match="No space left"):
            await log.append("s", Note(n=2))
        broken.clear()
        with pytest.raises(LogWriteFailed, match="Close it and open it again"):
            await log.append("s", Note(n=3))
        await log.close("s")
        await log.open("s")
        (event,) = await log.append("s", Note(n=4))
        assert event.seq == 2
    assert [e.n for e in read_file(tmp_path / "s.jsonl")] == [1, 4]


async def test_open_errors_reach_the_caller_and_the_actor_keeps_serving(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_bytes(b"garbage\n" + TEST_EVENTS.encode_lines([Note(n=1)]))
    holder = JsonlStore(tmp_path, registry=TEST_EVENTS).open("held")
    try:
        async with open_session_log(JsonlStore(tmp_path, registry=TEST_EVENTS)) as log:
            with pytest.raises(LogCorrupt, match=r"bad\.jsonl:1: line is not JSON"):
                await log.open("bad")
            with pytest.raises(SessionLocked, match=r"held\.jsonl"):
                await log.open("held")
            await log.open("fine")
            await log.append("fine", Note(n=1))
            with pytest.raises(SessionNotOpen):
                await log.read("held")
    finally:
        holder.handle.close()


# --- appends queued in the inbox loop, reads from the shared view -------------------------


@asynccontextmanager
async def log_actor(store: Any, **options: Any) -> AsyncIterator[SessionLogClient]:
    actor = SessionLogActor(store=store, **options)
    async with trio.open_nursery() as nursery:
        await nursery.start(actor.run)
        yield actor.client
        nursery.cancel_scope.cancel()


async def test_reads_never_see_half_a_batch(tmp_path: Path) -> None:
    fsync = CountingFsync(latency=0.001)
    async with open_session_log(JsonlStore(tmp_path, registry=TEST_EVENTS, fsync=fsync)) as log:
        await log.open("s")
        seen: list[EventView] = []
        done = trio.Event()

        async def writer(k: int) -> None:
            for i in range(20):
                await log.append("s", *(Note(n=k * 100 + i, payload=str(j)) for j in range(3)))

        async def reader() -> None:
            while not done.is_set():
                seen.append(await log.read("s"))
                # Not flat out: a loop that never waits starves the writer's thread
                # of the GIL (CPython's switch interval), and the test crawls.
                await trio.sleep(0.0002)

        async with trio.open_nursery() as readers:
            readers.start_soon(reader)
            async with trio.open_nursery() as writers:
                for k in range(10):
                    writers.start_soon(writer, k)
            done.set()
        final = await log.read("s")
    assert len(final) == 600
    assert all(len(view) % 3 == 0 for view in seen)  # whole appends only
    distinct = {len(view): view for view in seen}
    assert len(distinct) > 5, sorted(distinct)
    for view in distinct.values():
        assert tuple(view) == final[: len(view)]  # a prefix of the log, unchanged since
        assert [e.payload for e in view] == ["0", "1", "2"] * (len(view) // 3)


async def test_a_read_shares_the_log_instead_of_copying_it() -> None:
    async with open_session_log(MemoryStore(registry=TEST_EVENTS)) as log:
        opened = await log.open("s")
        await log.append("s", *(Note(n=n) for n in range(100)))
        first, second = await log.read("s"), await log.read("s")
        assert first is second and isinstance(first, EventView)
        await log.append("s", Note(n=100))
        third = await log.read("s")
        assert len(first) == 100 and len(third) == 101 and third[:100] == tuple(first)
        assert opened.events == ()


async def test_appends_beyond_a_full_queue_wait_their_turn(tmp_path: Path) -> None:
    fsync = CountingFsync(latency=0.002)
    store = JsonlStore(tmp_path, registry=TEST_EVENTS, fsync=fsync)
    acked: dict[int, int] = {}
    async with log_actor(store, max_batch=4) as log:
        await log.open("s")

        async def one(n: int) -> None:
            stamped = await log.append("s", Note(n=n), Note(n=-n - 1))
            assert stamped[1].seq == stamped[0].seq + 1
            acked[n] = stamped[0].seq

        async with trio.open_nursery() as nursery:
            for n in range(300):
                nursery.start_soon(one, n)
        assert len(await log.read("s")) == 600
    on_disk = read_file(tmp_path / "s.jsonl")
    assert [e.seq for e in on_disk] == list(range(1, 601))
    assert {e.n: e.seq for e in on_disk if e.n >= 0} == acked


async def test_conditional_appends_through_the_queue_are_decided_in_order() -> None:
    async with log_actor(MemoryStore(registry=TEST_EVENTS), max_batch=2) as log:
        await log.open("s")
        outcomes: dict[int, object] = {}

        async def one(n: int) -> None:
            try:
                outcomes[n] = (await log.append("s", Note(n=n), after_seq=0))[0].seq
            except AppendConflict as error:
                outcomes[n] = error.actual_last

        async with trio.open_nursery() as nursery:
            for n in range(50):
                nursery.start_soon(one, n)
        events = await log.read("s")
    (winner,) = events
    assert outcomes.pop(winner.n) == 1
    assert set(outcomes.values()) == {1}  # every other one saw the winner's commit


async def test_a_failed_commit_fails_everything_queued_behind_it(tmp_path: Path) -> None:
    entered, release, broken = threading.Event(), threading.Event(), threading.Event()

    def fsync(fd: int) -> None:
        if broken.is_set():
            entered.set()
            release.wait(10)
            raise OSError(28, "No space left on device")
        os.fsync(fd)

    async with log_actor(
        JsonlStore(tmp_path, registry=TEST_EVENTS, fsync=fsync), max_batch=2
    ) as log:
        await log.open("s")
        await log.append("s", Note(n=0))
        broken.set()
        failures: list[BaseException] = []

        async def one(n: int) -> None:
            try:
                await log.append("s", Note(n=n))
            except LogWriteFailed as error:
                failures.append(error)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(one, 1)
            await trio.to_thread.run_sync(entered.wait, 5)
            for n in range(2, 12):  # fill the queue and wait beyond it
                nursery.start_soon(one, n)
            await trio.sleep(0.05)
            assert [e.n for e in await log.read("s")] == [0]
            release.set()
        assert len(failures) == 11
        with pytest.raises(LogWriteFailed, match="Close it and open it again"):
            await log.append("s", Note(n=99))
        assert [e.n for e in await log.read("s")] == [0]


async def test_appends_waiting_for_room_at_close_are_committed_or_refused(tmp_path: Path) -> None:
    fsync = CountingFsync(latency=0.005)
    acked: list[int] = []
    refused: list[int] = []
    async with log_actor(
        JsonlStore(tmp_path, registry=TEST_EVENTS, fsync=fsync), max_batch=2
    ) as log:
        await log.open("s")

        async def one(n: int) -> None:
            try:
                await log.append("s", Note(n=n))
                acked.append(n)
            except SessionNotOpen:
                refused.append(n)

        async with trio.open_nursery() as nursery:
            for n in range(40):
                nursery.start_soon(one, n)
            await trio.sleep(0.002)
            await log.close("s")
    assert sorted(acked + refused) == list(range(40))
    # Exactly what was acknowledged is on disk, in the order it was acknowledged.
    assert sorted(e.n for e in read_file(tmp_path / "s.jsonl")) == sorted(acked)
