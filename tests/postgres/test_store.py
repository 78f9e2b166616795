"""The PostgreSQL store's own promises: schema, clear errors, fencing, durability, trust."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import trio

from stockade.errors import ConfigError
from stockade.harness import open_harness
from stockade.sessionlog import LogWriteFailed, SessionLocked, open_session_log
from stockade.sessionlog.stores.postgres import (
    SCHEMA_VERSION,
    PostgresStore,
    SchemaTooNew,
    SessionHeldElsewhere,
    SessionLockLost,
    StoreUnavailable,
    describe_dsn,
)

from ..sessionlog._helpers import TEST_EVENTS, Note
from ._cluster import PASSWORD, PASSWORD_ROLE
from .fixtures import fresh_database, sql, with_params


def notes(first: int, count: int) -> list[Note]:
    return [Note(n=i, seq=i, ts=1.0) for i in range(first, first + count)]


def store(dsn: str, **kwargs: object) -> PostgresStore:
    kwargs.setdefault("registry", TEST_EVENTS)
    kwargs.setdefault("pool_size", 2)
    return PostgresStore(dsn, **kwargs)  # type: ignore[arg-type]


# --- schema ------------------------------------------------------------------------------


def test_the_schema_is_made_on_first_use_and_kept(pg_dsn: str) -> None:
    dsn = fresh_database(pg_dsn)
    with store(dsn) as first:
        assert first.schema_version() == SCHEMA_VERSION
    tables = {
        row[0] for row in sql(dsn, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    }
    assert {"stockade_schema", "stockade_sessions", "stockade_events"} <= tables
    with store(dsn) as second:  # a second host: nothing to migrate, nothing lost
        opened = second.open("s")
        opened.handle.append(notes(1, 2))
        opened.handle.close()
        assert second.schema_version() == SCHEMA_VERSION
    assert sql(dsn, "SELECT version FROM stockade_schema") == [(SCHEMA_VERSION,)]


def test_a_newer_schema_is_refused_clearly(pg_dsn: str) -> None:
    dsn = fresh_database(pg_dsn)
    with store(dsn) as first:
        first.schema_version()
    sql(dsn, "UPDATE stockade_schema SET version = %s", (SCHEMA_VERSION + 1,))
    with store(dsn) as newer, pytest.raises(SchemaTooNew) as caught:
        newer.open("s")
    message = str(caught.value)
    assert f"version {SCHEMA_VERSION + 1}" in message and "Upgrade stockade" in message
    assert caught.value.found == SCHEMA_VERSION + 1


def test_events_cannot_be_rewritten_in_place(pg_dsn: str) -> None:
    import psycopg

    dsn = fresh_database(pg_dsn)
    with store(dsn) as s:
        opened = s.open("rewrite")
        opened.handle.append(notes(1, 1))
        opened.handle.close()
    with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
        sql(dsn, "UPDATE stockade_events SET ts = 0 WHERE session_id = 'rewrite'")


def test_a_deleted_tail_is_found_on_open(pg_dsn: str) -> None:
    from stockade.events import LogCorrupt

    dsn = fresh_database(pg_dsn)
    with store(dsn) as s:
        opened = s.open("cut")
        opened.handle.append(notes(1, 3))
        opened.handle.close()
        sql(dsn, "DELETE FROM stockade_events WHERE session_id = 'cut' AND seq = 3")
        with pytest.raises(LogCorrupt, match="ends at seq 3"):
            s.open("cut")
        sql(dsn, "DELETE FROM stockade_events WHERE session_id = 'cut' AND seq = 1")
        with pytest.raises(LogCorrupt, match="expected seq 1, found seq 2"):
            s.open("cut")


# --- clear errors ------------------------------------------------------------------------


def test_an_unreachable_database_is_a_clear_error(tmp_path: Path) -> None:
    dsn = f"host={tmp_path}/nowhere user=u dbname=d connect_timeout=2"
    with store(dsn) as s, pytest.raises(StoreUnavailable) as caught:
        s.open("s")
    message = str(caught.value)
    assert message.startswith(f"postgres u@{tmp_path}/nowhere:5432/d: connecting failed")
    assert "check that the server runs" in message


async def test_an_unreachable_database_fails_the_session_open_not_the_process(
    tmp_path: Path,
) -> None:
    entries = [
        {
            "id": "log",
            "name": "stockade.session.log",
            "config": {"store": "postgres", "dsn": f"host={tmp_path}/nowhere user=u dbname=d"},
        }
    ]
    async with open_harness(entries, cwd=str(tmp_path)) as harness:
        with pytest.raises(StoreUnavailable, match="connecting failed"):
            await harness.open_session(cwd=str(tmp_path))


def test_a_wrong_password_is_a_clear_error_that_never_shows_it(pg_dsn: str) -> None:
    dsn = with_params(pg_dsn, user=PASSWORD_ROLE, password="not-the-password")
    with store(dsn) as s, pytest.raises(StoreUnavailable) as caught:
        s.open("s")
    message = str(caught.value)
    assert "password authentication failed" in message
    assert "check the user and its password" in message
    assert "not-the-password" not in message and "not-the-password" not in describe_dsn(dsn)


def test_the_password_from_a_trusted_password_file(pg_dsn: str, state_dir_outside: str) -> None:
    passfile = Path(state_dir_outside) / "pgpass"
    passfile.write_text(f"*:*:*:{PASSWORD_ROLE}:{PASSWORD}\n")
    passfile.chmod(0o600)
    dsn = with_params(fresh_database(pg_dsn, owner=PASSWORD_ROLE), user=PASSWORD_ROLE)
    dsn = with_params(dsn, passfile=str(passfile))
    with store(dsn) as s:
        assert (str(passfile), "the session log database's password file") in s.trusted_files()
        opened = s.open(f"pw-{os.getpid()}")
        opened.handle.append(notes(1, 1))
        opened.handle.close()


async def test_a_password_file_a_command_could_write_is_refused(
    pg_dsn: str, scratch: str, state_dir_outside: str
) -> None:
    project = Path(scratch)
    elsewhere = Path(state_dir_outside)
    passfile = project / ".pgpass"
    passfile.write_text(f"*:*:*:{PASSWORD_ROLE}:{PASSWORD}\n")
    passfile.chmod(0o600)
    entries = [
        {
            "id": "log",
            "name": "stockade.session.log",
            "config": {
                "store": "postgres",
                "dsn": with_params(pg_dsn, user=PASSWORD_ROLE, passfile=str(passfile)),
            },
        }
    ]
    with pytest.raises(ConfigError, match=r"password file .* is not trusted"):
        async with open_harness(entries, cwd=str(project)):
            pass
    # Elsewhere it passes at start, and is refused for a session rooted over it.
    async with open_harness(entries, cwd=str(elsewhere)) as harness:
        with pytest.raises(ConfigError, match="inside the writable root"):
            await harness.open_session(cwd=str(project))


def test_a_password_written_in_the_composition_is_refused(pg_dsn: str, tmp_path: Path) -> None:
    import json

    from stockade.config import load_composition
    from stockade.harness import assemble

    dsn = with_params(pg_dsn, user=PASSWORD_ROLE, password=PASSWORD)
    literal = tmp_path / "literal.yml"
    literal.write_text(
        "- id: log\n  name: stockade.session.log\n"
        f"  config: {{store: postgres, dsn: {json.dumps(dsn)}}}\n"
    )
    with pytest.raises(ConfigError, match="carries its password in the file"):
        assemble(load_composition(literal), cwd="/")
    from_env = tmp_path / "env.yml"
    from_env.write_text(
        "- id: log\n  name: stockade.session.log\n"
        "  config: {store: postgres, dsn: !env STOCKADE_LOG_DSN}\n"
    )
    composition = load_composition(from_env, environ={"STOCKADE_LOG_DSN": dsn})
    actors, _ = assemble(composition, cwd=str(tmp_path))
    actors[0].store.close()


# --- durability --------------------------------------------------------------------------


def test_every_append_connection_commits_synchronously(pg_dsn: str) -> None:
    dsn = fresh_database(pg_dsn)
    name = dsn.split("dbname=")[1].split()[0]
    sql(dsn, f'ALTER DATABASE "{name}" SET synchronous_commit = off')
    with store(dsn) as s:
        opened = s.open("s")
        with s._connections.pool.connection() as conn:
            assert conn.execute("SHOW synchronous_commit").fetchone() == ("on",)
        opened.handle.close()


# --- losing the connection, losing the lock ----------------------------------------------


def backends(dsn: str, purpose: str, owner: str = "") -> list[int]:
    rows = sql(
        dsn,
        "SELECT pid FROM pg_stat_activity WHERE application_name LIKE %s"
        " AND datname = current_database() AND pid <> pg_backend_pid()",
        (f"stockade {purpose} (%{owner or os.getpid()}%",),
    )
    return [int(row[0]) for row in rows]


async def test_a_dropped_connection_mid_append_acknowledges_nothing_uncommitted(
    pg_dsn: str,
) -> None:
    dsn = fresh_database(pg_dsn)
    s = store(dsn, pool_size=3)
    acked: list[int] = []
    failures: list[BaseException] = []
    async with open_session_log(s) as log:
        await log.open("s")

        async def writer(k: int) -> None:
            for i in range(10_000):
                try:
                    (event,) = await log.append("s", Note(n=k * 100_000 + i, payload="y" * 500))
                except LogWriteFailed as error:
                    failures.append(error)
                    return
                acked.append(event.seq)

        async with trio.open_nursery() as nursery:
            for k in range(8):
                nursery.start_soon(writer, k)
            while len(acked) < 200:
                await trio.sleep(0.005)
            killed = backends(dsn, "appends")
            assert killed
            for pid in killed:
                sql(dsn, "SELECT pg_terminate_backend(%s)", (pid,))
        assert failures, "appends went on as if nothing happened"
        cause = failures[0].__cause__
        assert isinstance(cause, StoreUnavailable), cause
        assert "whether the batch reached the log is unknown" in str(cause)
        await log.close("s")
    # Every acknowledged event is there, gapless; the next open goes on from the end.
    with store(dsn) as reader:
        opened = reader.open("s")
        seqs = [event.seq for event in opened.events]
        assert seqs == list(range(1, len(seqs) + 1))
        assert set(acked) <= set(seqs)
        opened.handle.close()
    s.close()


async def test_a_writer_that_lost_its_lock_does_not_append(pg_dsn: str) -> None:
    dsn = fresh_database(pg_dsn)
    a, b = store(dsn, owner="host-a pid 1"), store(dsn, owner="host-b pid 2")
    try:
        held = a.open("s")
        held.handle.append(notes(1, 2))
        with pytest.raises(SessionHeldElsewhere) as caught:
            b.open("s")
        assert caught.value.holder.startswith("host-a pid 1 (database backend ")
        (lock_pid,) = backends(dsn, "locks", "host-a")
        sql(dsn, "SELECT pg_terminate_backend(%s)", (lock_pid,))
        for _ in range(100):  # the server ends the backend, and with it the lock
            if not backends(dsn, "locks", "host-a"):
                break
            await trio.sleep(0.02)
        with pytest.raises(SessionLockLost, match="no longer holds its lock"):
            held.handle.append(notes(3, 1))
        taken = b.open("s")  # another host takes over
        assert [e.seq for e in taken.events] == [1, 2]
        taken.handle.append(notes(3, 1))
        held.handle.close()
        with pytest.raises(SessionLocked):
            a.open("s")  # a's new lock connection finds b holding it
        taken.handle.close()
        again = a.open("s")
        assert [e.seq for e in again.events] == [1, 2, 3]
        again.handle.close()
    finally:
        a.close()
        b.close()


async def test_a_fenced_writer_cannot_append_after_a_takeover(pg_dsn: str) -> None:
    """Even with its lock seemingly held, an epoch another open moved stops a writer."""
    dsn = fresh_database(pg_dsn)
    with store(dsn) as a:
        held = a.open("s")
        sql(dsn, "UPDATE stockade_sessions SET epoch = epoch + 1 WHERE session_id = 's'")
        with pytest.raises(SessionLockLost):
            held.handle.append(notes(1, 1))
        held.handle.close()
        assert a.open("s").events == ()
