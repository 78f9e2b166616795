"""`python -m bench.pg_clients [--dsn DSN] [--seconds S]`: psycopg 3 vs asyncpg for the
session log's workload, from Trio (issue 17's choice; docs/decisions.md, docs/scaling.md).

Both clients run the PostgresStore's own append statement (the lock/epoch gate and
the insert of a batch, one statement, one round trip, `synchronous_commit = on`)
and its own replay query (the bytes only: no decoding), against the same database:

- psycopg 3 (+ psycopg-pool), blocking, each commit in a Trio worker thread (one
  thread limiter per session, as the SessionLogActor runs every store);
- asyncpg (+ its pool) on an asyncio loop that trio-asyncio runs inside the Trio
  loop, each commit awaited through `aio_as_trio`.

Workloads: one session committing batches of 50 events back to back (what 100
concurrent writers become under group commit), 100 sessions committing batches of
10 at once, one statement each (100 sessions x 10 writers, before the store's
cross-session combining), and reading back 10^6 events (the server joins each
20,000-event chunk's lines; the client joins the chunks).

Without --dsn it starts a throwaway cluster (tests/postgres/_cluster.py).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

POOL = 10


def _events(start: int, count: int, registry: Any) -> tuple[list[Any], list[bytes]]:
    from stockade.tools.events import ToolCalled

    events = [
        ToolCalled(
            seq=seq,
            ts=time.time(),
            call_id=f"call-{seq:012x}",
            name="bash",
            arguments={"command": "git status --short && ls -la src/", "timeout": 30},
        )
        for seq in range(start, start + count)
    ]
    lines = registry.encode_lines(events).split(b"\n")[:-1]
    return events, lines


def _asyncpg_sql(sql: str, names: list[str]) -> str:
    for index, name in enumerate(names, start=1):
        sql = sql.replace(f"%({name})s", f"${index}")
    return sql


_NAMES = [
    "sids", "epochs", "prevs", "lasts", "his", "los", "pids",
    "esids", "seqs", "tss", "types", "datas",
]  # fmt: skip


def _params(handle: Any, events: list[Any], lines: list[bytes]) -> dict[str, Any]:
    """The store's group-commit statement for one session's batch."""
    from stockade.sessionlog.stores.postgres.locks import key_halves

    high, low = key_halves(handle.key)
    return {
        "sids": [handle.session_id],
        "epochs": [handle.epoch],
        "prevs": [handle.last_seq],
        "lasts": [handle.last_seq + len(events)],
        "his": [high],
        "los": [low],
        "pids": [handle.holder_pid],
        "esids": [handle.session_id] * len(events),
        "seqs": [e.seq for e in events],
        "tss": [e.ts for e in events],
        "types": [e.tag for e in events],
        "datas": lines,
    }


async def _run_psycopg(store: Any, handles: list[Any], batch: int, seconds: float) -> float:
    import trio

    from stockade.sessionlog.stores.postgres.commit import APPEND

    pool = store._connections.pool
    registry = store.registry
    done = [0]
    deadline = time.perf_counter() + seconds

    def commit(handle: Any) -> None:
        events, lines = _events(handle.last_seq + 1, batch, registry)
        with pool.connection() as conn:
            rows = conn.execute(APPEND, _params(handle, events, lines), prepare=True).fetchall()
            assert rows == [(handle.session_id,)], rows
        handle.last_seq += batch

    async def session(handle: Any) -> None:
        limiter = trio.CapacityLimiter(1)
        while time.perf_counter() < deadline:
            await trio.to_thread.run_sync(commit, handle, limiter=limiter)
            done[0] += batch

    begun = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for handle in handles:
            nursery.start_soon(session, handle)
    return done[0] / (time.perf_counter() - begun)


async def _run_asyncpg(
    dsn: str, handles: list[Any], batch: int, seconds: float, registry: Any
) -> float:
    import asyncpg
    import trio
    import trio_asyncio

    from stockade.sessionlog.stores.postgres import dsn_parts
    from stockade.sessionlog.stores.postgres.commit import APPEND

    sql = _asyncpg_sql(APPEND, _NAMES)
    parts = dsn_parts(dsn)
    done = [0]
    async with trio_asyncio.open_loop():
        pool = await trio_asyncio.aio_as_trio(asyncpg.create_pool)(
            host=parts.get("host"),
            user=parts.get("user"),
            database=parts.get("dbname"),
            min_size=POOL,
            max_size=POOL,
            server_settings={"synchronous_commit": "on"},
        )
        fetch = trio_asyncio.aio_as_trio(pool.fetch)
        deadline = time.perf_counter() + seconds

        async def session(handle: Any) -> None:
            while time.perf_counter() < deadline:
                events, lines = _events(handle.last_seq + 1, batch, registry)
                params = _params(handle, events, lines)
                rows = await fetch(sql, *(params[name] for name in _NAMES))
                assert len(rows) == 1, rows
                handle.last_seq += batch
                done[0] += batch

        begun = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for handle in handles:
                nursery.start_soon(session, handle)
        rate = done[0] / (time.perf_counter() - begun)
        await trio_asyncio.aio_as_trio(pool.close)()
    return rate


async def _read_asyncpg(dsn: str, session_id: str, last_seq: int) -> float:
    import asyncpg
    import trio_asyncio

    from stockade.sessionlog.stores.postgres import dsn_parts
    from stockade.sessionlog.stores.postgres.read import READ, READ_CHUNK, READ_SETTINGS

    parts = dsn_parts(dsn)
    sql = READ.replace("%s", "$1", 1).replace("%s", "$2", 1).replace("%s", "$3", 1)
    async with trio_asyncio.open_loop():
        conn = await trio_asyncio.aio_as_trio(asyncpg.connect)(
            host=parts.get("host"), user=parts.get("user"), database=parts.get("dbname")
        )
        execute = trio_asyncio.aio_as_trio(conn.execute)
        fetchval = trio_asyncio.aio_as_trio(conn.fetchval)
        begun = time.perf_counter()
        await execute("BEGIN")
        for setting in READ_SETTINGS:
            await execute(setting)
        chunks = []
        for start in range(0, last_seq, READ_CHUNK):
            chunk = await fetchval(sql, session_id, start, start + READ_CHUNK)
            chunks.append(chunk + b"\n")
        await execute("COMMIT")
        data = b"".join(chunks)
        took = time.perf_counter() - begun
        await trio_asyncio.aio_as_trio(conn.close)()
    assert data.count(b"\n") == last_seq
    return took


def _read_psycopg(store: Any, session_id: str, last_seq: int) -> float:
    from stockade.sessionlog.stores.postgres.read import read_events

    begun = time.perf_counter()
    with store._connections.pool.connection() as conn, conn.transaction():
        data = b"".join(read_events(conn, session_id, last_seq))
    took = time.perf_counter() - begun
    assert data.count(b"\n") == last_seq
    return took


@contextlib.contextmanager
def _server(dsn: str | None) -> Iterator[str]:
    if dsn:
        yield dsn
        return
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "postgres"))
    import _cluster

    directory = tempfile.mkdtemp(prefix="stockade-pg-", dir="/var/tmp")
    try:
        yield _cluster.start(directory)
    finally:
        _cluster.stop(directory)
        shutil.rmtree(directory, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pg_clients", description=__doc__)
    parser.add_argument("--dsn", default=os.environ.get("STOCKADE_BENCH_PG_DSN"))
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--replay", type=int, default=1_000_000)
    args = parser.parse_args(argv)

    import trio

    from stockade.harness import harness_registry
    from stockade.sessionlog.stores.postgres import PostgresStore

    registry = harness_registry()
    tag = f"{os.getpid()}-{time.monotonic_ns()}"
    results: dict[str, dict[str, list[float]]] = {}
    with _server(args.dsn) as dsn, PostgresStore(dsn, registry=registry, pool_size=POOL) as store:
        one = [store.open(f"clients-one-{tag}").handle]
        many = [store.open(f"clients-many-{tag}-{i}").handle for i in range(100)]
        for round_ in range(args.rounds):
            for client in ("psycopg", "asyncpg") if round_ % 2 == 0 else ("asyncpg", "psycopg"):
                for name, handles, batch in (
                    ("1 session x 50/commit", one, 50),
                    ("100 sessions x 10/commit", many, 10),
                ):
                    if client == "psycopg":
                        rate = trio.run(_run_psycopg, store, handles, batch, args.seconds)
                    else:
                        rate = trio.run(_run_asyncpg, dsn, handles, batch, args.seconds, registry)
                    results.setdefault(name, {}).setdefault(client, []).append(rate)
                    print(f"round {round_} {client:8} {name:26} {rate:10,.0f} events/s", flush=True)
        # Replay: one long session, written in big batches.
        replay = store.open(f"clients-replay-{tag}").handle
        from stockade.sessionlog.stores.postgres.commit import APPEND

        while replay.last_seq < args.replay:
            count = min(10_000, args.replay - replay.last_seq)
            events, lines = _events(replay.last_seq + 1, count, registry)
            with store._connections.pool.connection() as conn:
                conn.execute(APPEND, _params(replay, events, lines))
            replay.last_seq += count
        name = f"read {args.replay:,} events (s)"
        for _ in range(args.rounds):
            results.setdefault(name, {}).setdefault("psycopg", []).append(
                _read_psycopg(store, replay.session_id, replay.last_seq)
            )
            results[name].setdefault("asyncpg", []).append(
                trio.run(_read_asyncpg, dsn, replay.session_id, replay.last_seq)
            )
        for handle in (*one, *many, replay):
            handle.close()
    print("\n| workload | psycopg 3, worker threads | asyncpg, trio-asyncio |\n|---|---|---|")
    for name, by_client in results.items():
        cells = []
        for client in ("psycopg", "asyncpg"):
            values = by_client[client]
            unit = "" if name.startswith("read") else " events/s"
            fmt = "{:.2f}" if name.startswith("read") else "{:,.0f}"
            cells.append(
                f"{fmt.format(statistics.median(values))}{unit} "
                f"({fmt.format(min(values))}-{fmt.format(max(values))})"
            )
        print(f"| {name} | {cells[0]} | {cells[1]} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
