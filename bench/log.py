"""Family `log`: durable appends (group commit) and replay of long session logs.

Appends: W concurrent writers appending one `tool/call` event at a time to one
session (W = 1, 10, 100), and 100 sessions with one writer each, for a fixed time,
through `open_session_log(JsonlStore(...))` on a real disk: every acknowledged
event was written and fsynced. The store's fsync is wrapped to count commits, so
events per commit shows the group commit at work. The same with a MemoryStore
shows the actor's own ceiling without a disk.

Replay: a log of 10^4 .. 10^6 events (a realistic mix of tool calls, results and
knob switches) written directly with the registry's encoder, then timed: open +
read + decode through `JsonlStore.open`, plus the fold (`knob_state`,
`resolve_execution_policy`); and the same through the actor (`Session.open` +
`execution_policy`). Broken down into read / decode / fold, beside
one `msgspec` `decode_lines` call over the whole file for comparison.

PostgreSQL (issue 17), side by side in the same run: the same append rows through
`PostgresStore` (plus 100 sessions x 10 writers for both stores), every commit
durable (`synchronous_commit = on`), over a local Unix socket; and replay + fold of
the same logs loaded into the database. The server is $STOCKADE_BENCH_PG_DSN, else
$STOCKADE_TEST_PG_DSN (CI's), else a throwaway cluster started for the run when the
server binaries are here (full runs only); `--quick` includes postgres only when a
server is already given. Without one the postgres rows are a note, not a failure.
"""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from ._common import (
    Check,
    Context,
    FamilyResult,
    Progress,
    Table,
    Target,
    filesystem_of,
    fmt,
    summarize,
)


def _tool_call(index: int) -> Any:
    from stockade.tools.events import ToolCalled

    return ToolCalled(
        call_id=f"call-{index:012x}",
        name="bash",
        arguments={"command": "git status --short && ls -la src/", "timeout": 30},
    )


def _mixed_event(index: int, seq: int, ts: float, root: str) -> Any:
    """One event of a realistic session: mostly tool calls and results, a few switches."""
    from stockade.policy.context import PolicyContext
    from stockade.policy.knobs import ApprovalPolicySet, SandboxModeSet
    from stockade.tools.events import ToolCalled, ToolResulted
    from stockade.vocab import ApprovalPolicy, SandboxMode

    kind = index % 100
    if kind == 0:
        mode = SandboxMode.READ_ONLY if index % 200 == 0 else SandboxMode.WORKSPACE_WRITE
        return SandboxModeSet(seq=seq, ts=ts, mode=mode)
    if kind == 50:
        return ApprovalPolicySet(seq=seq, ts=ts, policy=ApprovalPolicy.ASK)
    if kind == 99:
        return PolicyContext(
            seq=seq,
            ts=ts,
            source="sandbox:policy",
            text="Sandbox: workspace-write at " + root,
            sandbox_mode=SandboxMode.WORKSPACE_WRITE,
            workspace_root=root,
            approval_policy=ApprovalPolicy.ASK,
        )
    call = f"call-{index // 2:012x}"
    if index % 2:
        return ToolCalled(
            seq=seq,
            ts=ts,
            call_id=call,
            name="bash",
            arguments={"command": f"grep -rn pattern src/ | head -{index % 50}"},
        )
    return ToolResulted(
        seq=seq,
        ts=ts,
        call_id=call,
        name="bash",
        text="src/stockade/harness.py:42: pattern found\nsrc/stockade/cli.py:7: pattern\n",
        facts={"exit_code": 0, "denied": False, "mode": "workspace-write", "backend": "bwrap"},
    )


def write_log(path: str, count: int, registry: Any, root: str) -> int:
    """A session log of `count` events (header first), encoded by the registry; its size."""
    from stockade.events import SessionHeader

    ts = time.time()
    chunk = 10_000
    with open(path, "wb") as out:
        out.write(registry.encode_lines([SessionHeader(seq=1, ts=ts, cwd=root)]))
        seq = 2
        while seq <= count:
            end = min(count + 1, seq + chunk)
            events = [_mixed_event(index, index, ts, root) for index in range(seq, end)]
            out.write(registry.encode_lines(events))
            seq = end
    return os.path.getsize(path)


@contextlib.contextmanager
def postgres_server(ctx: Context) -> Iterator[str | None]:
    """A DSN for the postgres rows, or None (with the reason in a note) when there is none."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        yield None
        return
    dsn = os.environ.get("STOCKADE_BENCH_PG_DSN") or os.environ.get("STOCKADE_TEST_PG_DSN")
    if dsn or ctx.quick:
        yield dsn or None
        return
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "postgres")
    sys.path.insert(0, here)
    try:
        import _cluster
    finally:
        sys.path.remove(here)
    if _cluster.bin_dir() is None:
        yield None
        return
    directory = tempfile.mkdtemp(prefix="stockade-bench-pg-", dir="/var/tmp")
    try:
        dsn, watchdog = _cluster.start_owned(directory, max_connections=300)
    except BaseException:
        _cluster.stop(directory)
        shutil.rmtree(directory, ignore_errors=True)
        raise
    try:
        yield dsn
    finally:
        _cluster.finish(directory, watchdog)


async def _appends(
    store: Any,
    sessions: int,
    writers: int,
    seconds: float,
    progress: Progress,
    commits: Any,
) -> dict[str, Any]:
    """`commits()` counts commits so far (fsync calls, or MemoryStore.commits)."""
    import trio

    from stockade.events import SessionHeader
    from stockade.sessionlog import open_session_log

    latencies: list[float] = []
    counts = [0]
    async with open_session_log(store) as log:
        ids = [f"s{index:03d}-{os.getpid()}-{time.monotonic_ns()}" for index in range(sessions)]
        for session_id in ids:
            await log.open(session_id)
            await log.append(session_id, SessionHeader(cwd="/"))
        commits_before = commits()
        deadline = time.perf_counter() + seconds

        async def writer(session_id: str, seed: int) -> None:
            index = seed
            while time.perf_counter() < deadline:
                event = _tool_call(index)
                start = time.perf_counter()
                await log.append(session_id, event)
                latencies.append(time.perf_counter() - start)
                counts[0] += 1
                index += writers
                if counts[0] % 500 == 0:
                    progress.set(counts[0])

        begun = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for session_id in ids:
                for seed in range(writers):
                    nursery.start_soon(writer, session_id, seed)
        elapsed = time.perf_counter() - begun
        stored = 0
        gapless = True
        for session_id in ids:
            events = await log.read(session_id)
            stored += len(events)
            gapless = gapless and all(e.seq == i for i, e in enumerate(events, start=1))
            await log.close(session_id)
    committed = commits() - commits_before
    return {
        "sessions": sessions,
        "writers_per_session": writers,
        "events": counts[0],
        "seconds": elapsed,
        "events_per_s": counts[0] / elapsed,
        "commits": committed,
        "events_per_commit": counts[0] / committed if committed else None,
        "latency_ms": summarize(latencies, 1e3),
        "all_acknowledged_stored": stored == counts[0] + sessions and gapless,
    }


class CountingFsync:
    """`os.fsync` that counts; a JsonlStore calls it once per commit (plus file creation)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, fd: int) -> None:
        self.calls += 1
        os.fsync(fd)


def _store_alone(store: Any, sessions: int, batch: int, seconds: float) -> dict[str, Any]:
    """The store without the actor: a thread per session appending `batch` events at a
    time straight to its handle (what the actor's writer does once it has a batch)."""
    import threading

    from stockade.events import SessionHeader

    tag = f"{os.getpid()}-{time.monotonic_ns()}"
    handles = [store.open(f"alone-{tag}-{index}").handle for index in range(sessions)]
    for handle in handles:
        handle.append([SessionHeader(seq=1, ts=time.time(), cwd="/")])
    counts = [0] * sessions
    begun = time.perf_counter()
    deadline = begun + seconds

    def writer(index: int) -> None:
        handle, seq = handles[index], 2
        while time.perf_counter() < deadline:
            now = time.time()
            events = [
                msgspec.structs.replace(_tool_call(seq + k), seq=seq + k, ts=now)
                for k in range(batch)
            ]
            handle.append(events)
            seq += batch
            counts[index] += batch

    import msgspec

    threads = [threading.Thread(target=writer, args=(index,)) for index in range(sessions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - begun
    for handle in handles:
        handle.close()
    return {"events_per_s": sum(counts) / elapsed, "events": sum(counts)}


def _append_runs(ctx: Context, result: FamilyResult, dsn: str | None = None) -> None:
    import trio

    from stockade.harness import harness_registry
    from stockade.sessionlog import JsonlStore, MemoryStore

    registry = harness_registry()
    seconds = 0.25 if ctx.quick else 2.0
    plan = [(1, 1), (1, 10), (1, 100), (100, 1), (100, 10)]
    kinds = ("jsonl", "postgres", "memory") if dsn else ("jsonl", "memory")
    directory = ctx.scratch.dir("log-appends")
    result.figures["append_dir_fs"] = filesystem_of(directory)
    runs = []
    with Progress("log", "durable appends") as progress:
        for store_kind in kinds:
            for sessions, writers in plan:
                if store_kind == "memory" and sessions > 1 and writers == 1:
                    continue
                progress.label = f"{store_kind}: {sessions} session(s) x {writers} writer(s)"
                progress.set(0)
                if store_kind == "jsonl":
                    fsync = CountingFsync()
                    store: Any = JsonlStore(
                        os.path.join(directory, f"{sessions}x{writers}"),
                        registry=registry,
                        fsync=fsync,
                    )
                elif store_kind == "postgres":
                    from stockade.sessionlog.stores.postgres import PostgresStore

                    fsync = None
                    store = PostgresStore(dsn, registry=registry, pool_size=10)
                else:
                    fsync = None
                    store = MemoryStore(registry=registry)
                counter = (lambda f=fsync: f.calls) if fsync else (lambda s=store: s.commits)
                try:
                    entry = trio.run(_appends, store, sessions, writers, seconds, progress, counter)
                finally:
                    getattr(store, "close", lambda: None)()
                if fsync is not None:
                    size = sum(
                        os.path.getsize(os.path.join(store.directory, name))
                        for name in os.listdir(store.directory)
                    )
                    entry["bytes_per_event"] = size / max(1, entry["events"] + sessions)
                entry["store"] = store_kind
                runs.append(entry)
                result.checks.append(
                    Check(
                        f"log: {store_kind} {sessions}x{writers}: every acknowledged event "
                        "is in the log, seq gapless",
                        entry["all_acknowledged_stored"],
                    )
                )
    # The stores without the actor, 100 sessions x batches of 10: what each store
    # itself sustains, apart from the actor's own ceiling (the memory rows).
    alone = []
    for store_kind in [kind for kind in kinds if kind != "memory"]:
        if store_kind == "jsonl":
            store = JsonlStore(os.path.join(directory, "alone"), registry=registry)
        else:
            from stockade.sessionlog.stores.postgres import PostgresStore

            store = PostgresStore(dsn, registry=registry, pool_size=10)
        try:
            entry = _store_alone(store, 100, 10, seconds)
        finally:
            getattr(store, "close", lambda: None)()
        entry["store"] = store_kind
        alone.append(entry)
    result.figures["appends_store_alone"] = alone
    result.figures["appends"] = runs
    result.tables.append(
        Table(
            f"Durable appends (one `tool/call` event per append, {seconds:g} s per row; "
            f"JsonlStore on {result.figures['append_dir_fs']}"
            + ("; PostgresStore over a Unix socket, pool 10" if dsn else "")
            + ")",
            [
                "store",
                "sessions",
                "writers each",
                "events/s",
                "commits (fsync)",
                "events/commit",
                "append p50 ms",
                "p99 ms",
                "bytes/event",
            ],
            [
                [
                    r["store"],
                    r["sessions"],
                    r["writers_per_session"],
                    r["events_per_s"],
                    r["commits"],
                    r["events_per_commit"],
                    r["latency_ms"]["median"],
                    r["latency_ms"]["p99"],
                    r.get("bytes_per_event"),
                ]
                for r in runs
            ],
            "memory: MemoryStore, no disk: the actor's own ceiling. postgres: commits are "
            "statements, each one transaction holding every waiting session's batch.",
        )
    )
    result.tables.append(
        Table(
            "The stores alone (no actor): 100 sessions, a thread each, batches of 10 events",
            ["store", "events/s"],
            [[entry["store"], entry["events_per_s"]] for entry in alone],
            "What the store sustains once the actor hands it batches; the actor rows above "
            "are bounded by the memory row (the same Python process does both).",
        )
    )
    hundred = next(r for r in runs if r["store"] == "jsonl" and r["writers_per_session"] == 100)
    result.targets.append(
        Target(
            "durable appends, one session, 100 concurrent writers",
            ">= 20,000 events/s",
            f"{hundred['events_per_s']:,.0f} events/s ({fmt(hundred['events_per_commit'])} "
            "events per fsync)",
            hundred["events_per_s"] >= 20_000,
        )
    )
    if not dsn:
        result.notes.append(
            "postgres: no server (set STOCKADE_BENCH_PG_DSN, or install postgresql for a "
            "throwaway cluster in full runs); its rows were not measured"
        )
        return
    single = next(
        r
        for r in runs
        if r["store"] == "postgres" and r["sessions"] == 1 and r["writers_per_session"] == 100
    )
    many = next(
        r
        for r in runs
        if r["store"] == "postgres" and r["sessions"] == 100 and r["writers_per_session"] == 10
    )
    result.targets.append(
        Target(
            "postgres: durable appends, one session, 100 concurrent writers",
            ">= 10,000 events/s",
            f"{single['events_per_s']:,.0f} events/s ({fmt(single['events_per_commit'])} events "
            "per commit)",
            single["events_per_s"] >= 10_000,
        )
    )
    result.targets.append(
        Target(
            "postgres: 100 sessions x 10 writers, aggregate",
            ">= 20,000 events/s",
            f"{many['events_per_s']:,.0f} events/s ({fmt(many['events_per_commit'])} events "
            "per commit)",
            many["events_per_s"] >= 20_000,
        )
    )


def _replay_runs(ctx: Context, result: FamilyResult) -> None:
    import trio

    from stockade.harness import harness_registry
    from stockade.harness.session import Session
    from stockade.policy.knobs import PolicyDefaults, knob_state, resolve_execution_policy
    from stockade.sessionlog import JsonlStore, open_session_log, scan_log
    from stockade.sessionlog.stores.jsonl import _read_all

    registry = harness_registry()
    directory = ctx.scratch.dir("log-replay")
    root = ctx.scratch.dir("log-root")
    defaults = PolicyDefaults(fallback_root=root)
    sizes = (10_000, 100_000) if ctx.quick else (10_000, 100_000, 1_000_000)
    rows = []
    runs = []
    with Progress("log", "replay", len(sizes)) as progress:
        for count in sizes:
            progress.label = f"replay: writing {count:,} events"
            session_id = f"replay-{count}"
            path = os.path.join(directory, f"{session_id}.jsonl")
            written = time.perf_counter()
            size = write_log(path, count, registry, root)
            write_seconds = time.perf_counter() - written
            repeats = 1 if ctx.quick else (3 if count >= 1_000_000 else 5)
            store = JsonlStore(directory, registry=registry)
            totals, reads, decodes, decodes_nogc, folds, bulk = [], [], [], [], [], []
            progress.label = f"replay: {count:,} events"
            for _ in range(repeats):
                gc.collect()
                start = time.perf_counter()
                opened = store.open(session_id)
                opened_at = time.perf_counter()
                state = knob_state(opened.events, defaults)
                policy = resolve_execution_policy(opened.events, defaults, session_root=root)
                folded_at = time.perf_counter()
                opened.handle.close()
                assert len(opened.events) == count and policy.workspace_root == root
                totals.append(folded_at - start)
                folds.append(folded_at - opened_at)
                # The parts, measured apart: read the bytes, scan (decode) them, bulk decode.
                fd = os.open(path, os.O_RDONLY)
                try:
                    begun = time.perf_counter()
                    data = _read_all(fd)
                    reads.append(time.perf_counter() - begun)
                finally:
                    os.close(fd)
                begun = time.perf_counter()
                scanned = scan_log(data, path, registry)
                decodes.append(time.perf_counter() - begun)
                del scanned
                gc.collect()
                gc.disable()  # the same scan without the cyclic GC: how much of it is GC
                try:
                    begun = time.perf_counter()
                    scanned = scan_log(data, path, registry)
                    decodes_nogc.append(time.perf_counter() - begun)
                finally:
                    gc.enable()
                del scanned
                decoder = registry._decoder
                begun = time.perf_counter()
                decoder.decode_lines(data)
                bulk.append(time.perf_counter() - begun)
                del data, opened
                gc.collect()
            del state

            async def through_actor(session_id: str = session_id) -> tuple[float, list[float]]:
                async with open_session_log(JsonlStore(directory, registry=registry)) as log:
                    begun = time.perf_counter()
                    session = await Session.open(log, session_id=session_id, defaults=defaults)
                    await session.execution_policy()
                    took = time.perf_counter() - begun
                    # What every shell call pays afterwards: resolving the session's policy.
                    per_call = []
                    for _ in range(20):
                        begun = time.perf_counter()
                        await session.execution_policy()
                        per_call.append(time.perf_counter() - begun)
                    await session.close()
                return took, per_call

            timed = [
                trio.run(through_actor) for _ in range(1 if ctx.quick or count >= 1_000_000 else 3)
            ]
            actor = [took for took, _ in timed]
            per_call = [value for _, values in timed for value in values]
            entry = {
                "events": count,
                "bytes": size,
                "bytes_per_event": size / count,
                "write_seconds": write_seconds,
                "store_open_fold_s": summarize(totals),
                "read_s": summarize(reads),
                "scan_decode_s": summarize(decodes),
                "scan_decode_gc_paused_s": summarize(decodes_nogc),
                "fold_s": summarize(folds),
                "bulk_decode_lines_s": summarize(bulk),
                "session_open_s": summarize(actor),
                "execution_policy_ms": summarize(per_call, 1e3),
            }
            runs.append(entry)
            rows.append(
                [
                    count,
                    size / count,
                    entry["store_open_fold_s"]["median"],
                    f"{fmt(entry['store_open_fold_s']['min'])}-{fmt(entry['store_open_fold_s']['max'])}",
                    entry["read_s"]["median"],
                    entry["scan_decode_s"]["median"],
                    entry["scan_decode_gc_paused_s"]["median"],
                    entry["fold_s"]["median"],
                    entry["bulk_decode_lines_s"]["median"],
                    entry["session_open_s"]["median"],
                    entry["execution_policy_ms"]["median"],
                ]
            )
            os.unlink(path)
            progress.advance()
    result.figures["replay"] = runs
    result.tables.append(
        Table(
            "Replay + fold (seconds; page cache warm)",
            [
                "events",
                "bytes/event",
                "store open+fold",
                "min-max",
                "read bytes",
                "scan_log (decode)",
                "scan_log, GC paused",
                "fold",
                "decode_lines, one call",
                "Session.open via actor",
                "then execution_policy() per call, ms",
            ],
            rows,
            "store open+fold = JsonlStore.open (lock, read, scan, decode) + knob_state + "
            "resolve_execution_policy. `decode_lines, one call` decodes the whole file in "
            "one msgspec call (no per-line checks, GC on). The last column is what each later "
            "shell call of that session pays to resolve its policy (it reads the whole log).",
        )
    )
    biggest = runs[-1]
    if biggest["events"] >= 1_000_000:
        value = biggest["store_open_fold_s"]["median"]
        result.targets.append(
            Target(
                "replay+fold of 10^6 events",
                "< 2 s",
                f"{value:.2f} s through the store; "
                f"{biggest['session_open_s']['median']:.2f} s via Session.open",
                value < 2.0,
            )
        )


def load_postgres_log(dsn: str, session_id: str, count: int, registry: Any, root: str) -> None:
    """A session of `count` events (the JSON-lines mix) put straight into the database."""
    import psycopg

    from stockade.events import SessionHeader
    from stockade.sessionlog.stores.postgres import PostgresStore

    with PostgresStore(dsn, registry=registry, pool_size=1) as store:
        store.schema_version()  # the schema exists
    ts = time.time()
    with psycopg.connect(dsn, autocommit=True) as conn:
        with conn.transaction():
            conn.execute("DELETE FROM stockade_events WHERE session_id = %s", (session_id,))
            conn.execute("DELETE FROM stockade_sessions WHERE session_id = %s", (session_id,))
            conn.execute(
                "INSERT INTO stockade_sessions (session_id, last_seq) VALUES (%s, %s)",
                (session_id, count),
            )
            with conn.cursor().copy(
                "COPY stockade_events (session_id, seq, ts, type, data) FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["text", "int8", "float8", "text", "bytea"])
                seq = 1
                while seq <= count:
                    end = min(count + 1, seq + 10_000)
                    events = [
                        SessionHeader(seq=1, ts=ts, cwd=root)
                        if index == 1
                        else _mixed_event(index, index, ts, root)
                        for index in range(seq, end)
                    ]
                    lines = registry.encode_lines(events).split(b"\n")
                    for event, line in zip(events, lines, strict=False):
                        copy.write_row((session_id, event.seq, event.ts, event.tag, line))
                    seq = end
        conn.execute("ANALYZE stockade_events")


def _pg_replay_runs(ctx: Context, result: FamilyResult, dsn: str) -> None:
    import trio

    from stockade.harness import harness_registry
    from stockade.harness.session import Session
    from stockade.policy.knobs import PolicyDefaults, knob_state, resolve_execution_policy
    from stockade.sessionlog import open_session_log
    from stockade.sessionlog.stores.postgres import PostgresStore

    registry = harness_registry()
    root = ctx.scratch.dir("log-root-pg")
    defaults = PolicyDefaults(fallback_root=root)
    sizes = (10_000,) if ctx.quick else (10_000, 100_000, 1_000_000)
    runs = []
    with Progress("log", "postgres replay", len(sizes)) as progress:
        for count in sizes:
            session_id = f"replay-{count}-{os.getpid()}"
            progress.label = f"postgres replay: loading {count:,} events"
            begun = time.perf_counter()
            load_postgres_log(dsn, session_id, count, registry, root)
            load_seconds = time.perf_counter() - begun
            progress.label = f"postgres replay: {count:,} events"
            totals, folds = [], []
            repeats = 1 if ctx.quick else 3
            with PostgresStore(dsn, registry=registry, pool_size=1) as store:
                for _ in range(repeats):
                    gc.collect()
                    start = time.perf_counter()
                    opened = store.open(session_id)
                    opened_at = time.perf_counter()
                    knob_state(opened.events, defaults)
                    policy = resolve_execution_policy(opened.events, defaults, session_root=root)
                    folded_at = time.perf_counter()
                    opened.handle.close()
                    assert len(opened.events) == count and policy.workspace_root == root
                    totals.append(folded_at - start)
                    folds.append(folded_at - opened_at)
                    del opened
                    gc.collect()

            async def through_actor(session_id: str = session_id) -> float:
                store = PostgresStore(dsn, registry=registry, pool_size=1)
                try:
                    async with open_session_log(store) as log:
                        begun = time.perf_counter()
                        session = await Session.open(log, session_id=session_id, defaults=defaults)
                        await session.execution_policy()
                        took = time.perf_counter() - begun
                        await session.close()
                finally:
                    store.close()
                return took

            actor = [trio.run(through_actor)]
            runs.append(
                {
                    "events": count,
                    "load_seconds": load_seconds,
                    "store_open_fold_s": summarize(totals),
                    "fold_s": summarize(folds),
                    "session_open_s": summarize(actor),
                }
            )
            progress.advance()
    result.figures["replay_postgres"] = runs
    result.tables.append(
        Table(
            "Replay + fold from PostgreSQL (seconds; the server's cache warm after loading)",
            [
                "events",
                "store open+fold",
                "min-max",
                "fold",
                "Session.open via actor",
                "load (COPY)",
            ],
            [
                [
                    r["events"],
                    r["store_open_fold_s"]["median"],
                    f"{fmt(r['store_open_fold_s']['min'])}-{fmt(r['store_open_fold_s']['max'])}",
                    r["fold_s"]["median"],
                    r["session_open_s"]["median"],
                    r["load_seconds"],
                ]
                for r in runs
            ],
            "store open+fold = PostgresStore.open (lock, epoch, the server joining the "
            "events' lines 20,000 at a time, scan_log) + knob_state + resolve_execution_policy.",
        )
    )
    biggest = runs[-1]
    if biggest["events"] >= 1_000_000:
        value = biggest["store_open_fold_s"]["median"]
        result.targets.append(
            Target(
                "postgres: replay+fold of 10^6 events",
                "< 5 s",
                f"{value:.2f} s through the store; "
                f"{biggest['session_open_s']['median']:.2f} s via Session.open",
                value < 5.0,
            )
        )


def run(ctx: Context) -> FamilyResult:
    result = FamilyResult("log")
    with postgres_server(ctx) as dsn:
        _append_runs(ctx, result, dsn)
        _replay_runs(ctx, result)
        if dsn:
            _pg_replay_runs(ctx, result, dsn)
    return result


def plot(result: FamilyResult, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.6))
    appends = result.figures["appends"]
    colors = {"jsonl": "#1f77b4", "postgres": "#9467bd", "memory": "#7f7f7f"}
    for store, marker in (("jsonl", "o"), ("postgres", "D"), ("memory", "s")):
        rows = sorted(
            (r for r in appends if r["store"] == store and r["sessions"] == 1),
            key=lambda r: r["writers_per_session"],
        )
        if rows:
            left.plot(
                [r["writers_per_session"] for r in rows],
                [r["events_per_s"] for r in rows],
                "-",
                marker=marker,
                color=colors[store],
                label=f"{store}: one session",
            )
        for r in (r for r in appends if r["store"] == store and r["sessions"] > 1):
            left.scatter(
                [r["sessions"] * r["writers_per_session"]],
                [r["events_per_s"]],
                marker="^" if r["writers_per_session"] == 1 else "v",
                s=60,
                color=colors[store],
                zorder=3,
                label=f"{store}: {r['sessions']} sessions x {r['writers_per_session']}",
            )
    for entry in result.figures.get("appends_store_alone") or []:
        left.scatter(
            [1000],
            [entry["events_per_s"]],
            marker="*",
            s=120,
            color=colors[entry["store"]],
            zorder=3,
            label=f"{entry['store']} alone (no actor): 100 sessions x 10",
        )
    left.axhline(20_000, color="#d62728", linestyle="--", linewidth=1, label="target: 20,000/s")
    left.axhline(
        10_000, color="#ff7f0e", linestyle=":", linewidth=1, label="postgres, 1 session: 10,000/s"
    )
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("concurrent writers (all sessions)")
    left.set_ylabel("acknowledged durable events/s")
    left.set_title("Append rate vs writers (group commit)")
    left.grid(alpha=0.3, which="both")
    left.legend(fontsize=6.5, ncol=2)

    replay = result.figures["replay"]
    counts = [r["events"] for r in replay]
    for key, label in (
        ("store_open_fold_s", "jsonl: JsonlStore.open + fold"),
        ("session_open_s", "jsonl: Session.open via actor"),
        ("scan_decode_s", "scan_log alone"),
    ):
        right.plot(counts, [r[key]["median"] for r in replay], "-o", label=label)
    for r_key, label, style in (
        ("store_open_fold_s", "postgres: PostgresStore.open + fold", "-D"),
        ("session_open_s", "postgres: Session.open via actor", "--D"),
    ):
        pg = result.figures.get("replay_postgres") or []
        if pg:
            right.plot(
                [r["events"] for r in pg],
                [r[r_key]["median"] for r in pg],
                style,
                color="#9467bd",
                label=label,
            )
    right.axhline(
        2.0, color="#d62728", linestyle="--", linewidth=1, label="jsonl target: 2 s at 10^6"
    )
    right.axhline(
        5.0, color="#ff7f0e", linestyle=":", linewidth=1, label="postgres target: 5 s at 10^6"
    )
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("events in the log")
    right.set_ylabel("seconds (median)")
    right.set_title("Replay + fold time vs log length")
    right.grid(alpha=0.3, which="both")
    right.legend(fontsize=6.5)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
