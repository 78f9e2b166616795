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
"""

from __future__ import annotations

import gc
import os
import time
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


def _append_runs(ctx: Context, result: FamilyResult) -> None:
    import trio

    from stockade.harness import harness_registry
    from stockade.sessionlog import JsonlStore, MemoryStore

    registry = harness_registry()
    seconds = 0.25 if ctx.quick else 2.0
    plan = [(1, 1), (1, 10), (1, 100), (100, 1)]
    directory = ctx.scratch.dir("log-appends")
    result.figures["append_dir_fs"] = filesystem_of(directory)
    runs = []
    with Progress("log", "durable appends") as progress:
        for store_kind in ("jsonl", "memory"):
            for sessions, writers in plan:
                if store_kind == "memory" and sessions > 1:
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
                else:
                    fsync = None
                    store = MemoryStore(registry=registry)
                counter = (lambda f=fsync: f.calls) if fsync else (lambda s=store: s.commits)
                entry = trio.run(_appends, store, sessions, writers, seconds, progress, counter)
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
    result.figures["appends"] = runs
    result.tables.append(
        Table(
            f"Durable appends (one `tool/call` event per append, {seconds:g} s per row; "
            f"JsonlStore on {result.figures['append_dir_fs']})",
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
            "memory: MemoryStore, no disk: the actor's own ceiling.",
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


def _replay_runs(ctx: Context, result: FamilyResult) -> None:
    import trio

    from stockade.harness import harness_registry
    from stockade.policy.knobs import PolicyDefaults, knob_state, resolve_execution_policy
    from stockade.session import Session
    from stockade.sessionlog import JsonlStore, open_session_log, scan_log
    from stockade.sessionlog._store import _read_all

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


def run(ctx: Context) -> FamilyResult:
    result = FamilyResult("log")
    _append_runs(ctx, result)
    _replay_runs(ctx, result)
    return result


def plot(result: FamilyResult, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    appends = result.figures["appends"]
    for store, marker in (("jsonl", "o"), ("memory", "s")):
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
                label=f"{store}: one session",
            )
    many = [r for r in appends if r["sessions"] > 1]
    for r in many:
        left.scatter(
            [r["sessions"] * r["writers_per_session"]],
            [r["events_per_s"]],
            marker="^",
            color="#2ca02c",
            zorder=3,
            label=f"{r['store']}: {r['sessions']} sessions x 1",
        )
    left.axhline(20_000, color="#d62728", linestyle="--", linewidth=1, label="target: 20,000/s")
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("concurrent writers")
    left.set_ylabel("acknowledged events/s")
    left.set_title("Append rate vs writers (group commit)")
    left.grid(alpha=0.3, which="both")
    left.legend(fontsize=7)

    replay = result.figures["replay"]
    counts = [r["events"] for r in replay]
    for key, label in (
        ("store_open_fold_s", "JsonlStore.open + fold"),
        ("session_open_s", "Session.open via actor"),
        ("scan_decode_s", "scan_log alone"),
        ("bulk_decode_lines_s", "msgspec decode_lines, one call (GC on)"),
    ):
        right.plot(counts, [r[key]["median"] for r in replay], "-o", label=label)
    right.axhline(2.0, color="#d62728", linestyle="--", linewidth=1, label="target: 2 s at 10^6")
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("events in the log")
    right.set_ylabel("seconds (median)")
    right.set_title("Replay + fold time vs log length")
    right.grid(alpha=0.3, which="both")
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
