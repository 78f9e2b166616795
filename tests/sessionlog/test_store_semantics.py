"""One suite, every durable store: the JSON-lines store and the PostgreSQL store must
mean the same thing (docs/sessionlog.md, docs/scaling.md).

Each test runs once per store, through a `Kit` that makes stores over one shared
backing (a state directory, or a database): a second store over the same backing
is what another process, or another host, sees.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from stockade.entry import main as cli_main
from stockade.events import AppendConflict, EventRegistry, SessionEvent, UnknownEventType
from stockade.harness import harness_registry
from stockade.harness.session import Session
from stockade.policy.knobs import knob_state, resolve_execution_policy
from stockade.sessionlog import (
    BUILTIN_EVENTS,
    InvalidSessionId,
    JsonlStore,
    MemoryStore,
    SessionLocked,
    open_session_log,
    scan_log,
)
from stockade.vocab import ApprovalPolicy, SandboxMode

from ._helpers import DEFAULTS, TEST_EVENTS, CountingFsync, Note

STORES = ("jsonl", "postgres")


class Kit:
    """Stores over one backing, and what differs between kinds (commit counts, peeking)."""

    def __init__(
        self, kind: str, make: Callable[[EventRegistry], Any], peek: Any, entry: dict[str, Any]
    ):
        self.kind = kind
        self._make = make
        self._peek = peek
        self.entry = entry  # the `stockade.session.log` config naming this backing
        self.made: list[Any] = []
        self.prefix = f"t{uuid.uuid4().hex[:8]}"

    def store(self, registry: EventRegistry = TEST_EVENTS) -> Any:
        store = self._make(registry)
        self.made.append(store)
        return store

    def sid(self, name: str) -> str:
        """A session id of this test's own (the database outlives one test)."""
        return f"{self.prefix}-{name}"

    def commits(self, store: Any) -> int:
        return store.fsync.count if self.kind == "jsonl" else store.commits

    def peek(
        self, session_id: str, registry: EventRegistry = TEST_EVENTS
    ) -> tuple[SessionEvent, ...]:
        """What an independent reader finds now, taking no lock."""
        return tuple(self._peek(session_id, registry))

    def close(self) -> None:
        for store in self.made:
            with contextlib.suppress(Exception):
                getattr(store, "close", lambda: None)()


@pytest.fixture(params=STORES)
def kit(request: pytest.FixtureRequest, state_dir_outside: str) -> Iterator[Kit]:
    if request.param == "jsonl":
        directory = Path(state_dir_outside)

        def make(registry: EventRegistry) -> Any:
            # A fast SSD's flush, so how many appends share one depends on the store.
            return JsonlStore(directory, registry=registry, fsync=CountingFsync(latency=0.002))

        def peek(session_id: str, registry: EventRegistry) -> Any:
            path = directory / f"{session_id}.jsonl"
            return scan_log(path.read_bytes(), str(path), registry).events

        kit = Kit("jsonl", make, peek, {"state_dir": str(directory)})
    else:
        dsn = request.getfixturevalue("pg_dsn")
        from stockade.sessionlog.stores.postgres import PostgresStore

        def make(registry: EventRegistry) -> Any:
            return PostgresStore(dsn, registry=registry, pool_size=4)

        def peek(session_id: str, registry: EventRegistry) -> Any:
            with PostgresStore(dsn, registry=registry, pool_size=1) as reader:
                return reader.scan(session_id).events

        kit = Kit("postgres", make, peek, {"store": "postgres", "dsn": dsn, "pool_size": 2})
    try:
        yield kit
    finally:
        kit.close()


def notes(first: int, count: int) -> list[SessionEvent]:
    return [Note(n=i, seq=i, ts=1.0, payload="x" * i) for i in range(first, first + count)]


def test_resume_finds_every_event_contiguous(kit: Kit) -> None:
    sid = kit.sid("s")
    opened = kit.store().open(sid)
    assert opened.events == () and opened.torn is None
    opened.handle.append(notes(1, 3))
    opened.handle.append(notes(4, 1))
    opened.handle.close()
    opened.handle.close()  # idempotent
    again = kit.store().open(sid)  # another process (or host) resumes it
    assert again.events == tuple(notes(1, 4))
    again.handle.append(notes(5, 2))
    again.handle.close()
    assert [event.seq for event in kit.peek(sid)] == [1, 2, 3, 4, 5, 6]


def test_session_ids_are_checked_the_same(kit: Kit) -> None:
    for bad in ("", "../x", "a/b", "-x", "x" * 129, "a\n"):
        with pytest.raises(InvalidSessionId):
            kit.store().open(bad)


def test_one_writer_per_session(kit: Kit) -> None:
    sid = kit.sid("locked")
    first, second = kit.store(), kit.store()
    held = first.open(sid)
    with pytest.raises(SessionLocked) as caught:
        second.open(sid)
    assert caught.value.session_id == sid
    with pytest.raises(SessionLocked):
        first.open(sid)  # the same store: a second writer in this process
    held.handle.append(notes(1, 1))
    held.handle.close()  # released on close
    taken = second.open(sid)
    assert taken.events == tuple(notes(1, 1))
    taken.handle.close()


def test_an_unknown_type_is_refused_on_open(kit: Kit) -> None:
    sid = kit.sid("unknown")
    opened = kit.store().open(sid)
    opened.handle.append(notes(1, 2))
    opened.handle.close()
    with pytest.raises(UnknownEventType, match="test/note"):
        kit.store(BUILTIN_EVENTS).open(sid)


async def test_an_acknowledged_append_is_committed(kit: Kit) -> None:
    """Every append the actor acknowledged is in the store for any reader, at its seq."""
    sid = kit.sid("acked")
    async with open_session_log(kit.store()) as log:
        await log.open(sid)
        for n in range(5):
            (event,) = await log.append(sid, Note(n=n))
            found = kit.peek(sid)
            assert found[-1] == event and len(found) == event.seq


async def test_concurrent_appenders_share_a_commit(kit: Kit) -> None:
    sid = kit.sid("group")
    store = kit.store()
    acked: dict[int, int] = {}
    async with open_session_log(store) as log:
        await log.open(sid)
        before = kit.commits(store)

        async def one(n: int) -> None:
            (event,) = await log.append(sid, Note(n=n))
            acked[n] = event.seq

        async with trio.open_nursery() as nursery:
            for n in range(2000):
                nursery.start_soon(one, n)
        commits = kit.commits(store) - before
    assert sorted(acked.values()) == list(range(1, 2001))
    stored = kit.peek(sid)
    assert {event.n: event.seq for event in stored} == acked  # type: ignore[attr-defined]
    print(f"{kit.kind}: 2000 appends in {commits} commits")
    assert commits * 10 <= 2000, commits


async def test_conditional_appends_and_batches_stay_whole(kit: Kit) -> None:
    sid = kit.sid("cond")
    async with open_session_log(kit.store()) as log:
        await log.open(sid)
        (first,) = await log.append(sid, Note(n=0), after_seq=0)
        with pytest.raises(AppendConflict):
            await log.append(sid, Note(n=1), after_seq=0)

        async def batch(k: int) -> None:
            stamped = await log.append(sid, *(Note(n=k * 10 + j) for j in range(5)))
            assert [e.seq for e in stamped] == list(range(stamped[0].seq, stamped[0].seq + 5))

        async with trio.open_nursery() as nursery:
            for k in range(20):
                nursery.start_soon(batch, k)
        assert first.seq == 1
    stored = kit.peek(sid)
    assert [event.seq for event in stored] == list(range(1, 102))


async def _policy_script(log: Any, sid: str) -> tuple[Session, Session]:
    session = await Session.open(log, session_id=sid, cwd="/work/demo", defaults=DEFAULTS)
    await session.pre_step()
    await session.set_sandbox_mode("read-only")
    await session.select_preset("danger-full-access")
    await session.set_sandbox_mode("read-only")
    await session.set_approval_policy("never")
    await session.pre_step()
    child = await session.fork_child(session_id=f"{sid}-child")
    return session, child


async def test_replay_and_fold_are_identical(kit: Kit) -> None:
    """The same script on a memory store and on this one: the same bytes, the same folds."""
    registry = harness_registry()
    sid = kit.sid("fold")
    results = {}
    for name, store in (
        ("memory", MemoryStore(registry=registry)),
        (kit.kind, kit.store(registry)),
    ):
        async with open_session_log(store, clock=lambda: 1796000000.25) as log:
            session, child = await _policy_script(log, sid)
            await child.close()
            await session.close()
        results[name] = store
    reopened = kit.store(registry)
    for session_id in (sid, f"{sid}-child"):
        expected = results["memory"].open(session_id)
        got = reopened.open(session_id)
        assert registry.encode_lines(got.events) == registry.encode_lines(expected.events)
        assert got.events == expected.events
        for events in (got.events, expected.events):
            assert knob_state(events, DEFAULTS) == knob_state(expected.events, DEFAULTS)
            assert resolve_execution_policy(
                events, DEFAULTS, session_root="/work/demo"
            ) == resolve_execution_policy(expected.events, DEFAULTS, session_root="/work/demo")
        got.handle.close()
        expected.handle.close()


async def test_fork_child_is_a_snapshot(kit: Kit) -> None:
    sid = kit.sid("parent")
    async with open_session_log(kit.store(harness_registry())) as log:
        session, child = await _policy_script(log, sid)
        assert await child.sandbox_mode() == SandboxMode.READ_ONLY
        assert await child.approval_policy() == ApprovalPolicy.NEVER
        await child.set_sandbox_mode("workspace-write")  # touches only the child's log
        assert await session.sandbox_mode() == SandboxMode.READ_ONLY
        await child.close()
        await session.close()
    # Another host resumes both and resolves them as they were left.
    async with open_session_log(kit.store(harness_registry())) as log:
        child = await Session.open(log, session_id=f"{sid}-child", defaults=DEFAULTS)
        events = await child.events()
        assert events[0].parent == sid  # type: ignore[attr-defined]
        inherited = [e for e in events if e.source == f"inherited:{sid}"]
        assert {e.tag for e in inherited} == {"sandbox/mode", "approval/policy"}
        assert await child.sandbox_mode() == SandboxMode.WORKSPACE_WRITE
        parent = await Session.open(log, session_id=sid, defaults=DEFAULTS)
        assert await parent.sandbox_mode() == SandboxMode.READ_ONLY
        await parent.close()
        await child.close()


async def test_session_show_reads_through_the_composition(
    kit: Kit, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sid = kit.sid("shown")
    async with open_session_log(kit.store(harness_registry())) as log:
        session, child = await _policy_script(log, sid)
        await child.close()
        await session.close()
    config = tmp_path / "stockade.yml"
    config.write_text(
        msgspec.json.encode(
            [{"id": "log", "name": "stockade.session.log", "config": kit.entry}]
        ).decode()
    )
    capsys.readouterr()
    env = {k: v for k, v in os.environ.items() if k != "STOCKADE_STATE_DIR"}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "environ", env)
        status = cli_main(["session", "show", sid, "--config", str(config), "--json"])
        out = capsys.readouterr().out
        assert status == 0, out
        shown = msgspec.json.decode(out)
        assert shown["session"] == sid
        assert [e["seq"] for e in shown["events"]] == list(range(1, len(shown["events"]) + 1))
        assert shown["effective"]["sandbox_mode"] == "read-only"
        assert shown["effective"]["approval_policy"] == "never"
        assert cli_main(["session", "show", sid, "--config", str(config)]) == 0
        text = capsys.readouterr().out
        assert f"session  {sid}" in text and "approval policy  never" in text
        assert cli_main(["session", "show", kit.sid("missing"), "--config", str(config)]) == 1
        assert "no session" in capsys.readouterr().err


def test_nothing_is_read_from_another_session(kit: Kit) -> None:
    a, b = kit.sid("a"), kit.sid("a2")
    store = kit.store()
    first, second = store.open(a), store.open(b)
    first.handle.append(notes(1, 2))
    second.handle.append(notes(1, 1))
    first.handle.close()
    second.handle.close()
    assert len(kit.peek(a)) == 2 and len(kit.peek(b)) == 1
