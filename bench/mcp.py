"""Family `mcp`: what a tool call costs through `stockade mcp` over the same call
through the harness, and how many calls one connection carries.

One `stockade mcp` server per protocol era (the 2025-11-25 handshake and the
2026-07-28 per-request envelope), spawned once and driven by the MCP SDK's own
client over stdio, beside an in-process harness with the same composition. Per
round, in shuffled order: `bash -c true` through the harness and through each
server, and `job_output` of an unknown job (a call that spawns nothing, so only the
protocol and the harness are timed). The added latency is the median of the
per-round differences (MCP minus harness, same tool, same round). Throughput: calls
per second on one connection, one caller at a time and C callers at once.
"""

from __future__ import annotations

import os
import random
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ._common import Check, Context, FamilyResult, Progress, Table, Target, fmt, summarize

ERAS = {"2025-11-25": "legacy", "2026-07-28": "auto"}
TOOLS = {
    "bash true": ("bash", {"command": "true"}),
    "job_output (no spawn)": ("job_output", {"job_id": "no-such-job"}),
}
TARGET_MS = 2.0


async def _measure(ctx: Context, rounds: int, seconds: float, callers: int) -> dict[str, Any]:
    import trio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from stockade import open_harness

    root = ctx.scratch.dir("mcp-root")
    state = ctx.scratch.dir("mcp-state")
    env = {**os.environ, "STOCKADE_STATE_DIR": state}

    def params(era: str) -> Any:
        # Each server on the same root, told apart by its session id (to find its pid).
        argv = [sys.executable, "-m", "stockade", "mcp", "--root", root, "--session-id"]
        argv.append(f"bench-{ERAS[era]}-{os.getpid()}")
        return StdioServerParameters(command=argv[0], args=argv[1:], env=env)

    previous = os.environ.get("STOCKADE_STATE_DIR")
    os.environ["STOCKADE_STATE_DIR"] = state
    figures: dict[str, Any] = {"rounds": rounds, "callers": callers, "seconds": seconds}
    checks: list[Check] = []
    try:
        with open(os.path.join(state, "server-stderr.txt"), "a") as errlog:  # noqa: ASYNC230
            async with (
                open_harness(None, cwd=root) as harness,
                Client(stdio_client(params("2025-11-25"), errlog=errlog), mode="legacy") as legacy,
                Client(stdio_client(params("2026-07-28"), errlog=errlog), mode="auto") as modern,
            ):
                session = await harness.open_session(cwd=root)
                clients = {"2025-11-25": legacy, "2026-07-28": modern}
                eras_seen = {era: client.protocol_version for era, client in clients.items()}
                figures["eras"] = eras_seen
                checks.append(
                    Check(
                        "mcp: each client speaks its era",
                        eras_seen == {era: era for era in ERAS},
                        str(eras_seen),
                    )
                )
                bad: list[str] = []

                def via_harness(tool: str) -> Callable[[], Awaitable[Any]]:
                    name, arguments = TOOLS[tool]

                    async def call() -> Any:
                        return await session.run_tool(name, arguments)

                    return call

                def via_mcp(era: str, tool: str) -> Callable[[], Awaitable[Any]]:
                    name, arguments = TOOLS[tool]
                    client = clients[era]

                    async def call() -> Any:
                        result = await client.call_tool(name, arguments)
                        if name == "bash" and result.structured_content.get("exit_code") != 0:
                            bad.append(result.content[0].text)
                        return result

                    return call

                cases: dict[tuple[str, str], Callable[[], Awaitable[Any]]] = {}
                for tool in TOOLS:
                    cases[(tool, "harness")] = via_harness(tool)
                    for era in ERAS:
                        cases[(tool, f"mcp {era}")] = via_mcp(era, tool)
                samples: dict[tuple[str, str], list[float]] = {key: [] for key in cases}
                order = list(cases)
                rng = random.Random(ctx.seed)
                with Progress("mcp", "interleaved calls", rounds * len(cases)) as progress:
                    for call in cases.values():  # warm up: imports, caches, the probe
                        for _ in range(3):
                            await call()
                    for _ in range(rounds):
                        rng.shuffle(order)
                        for key in order:
                            start = time.perf_counter()
                            await cases[key]()
                            samples[key].append(time.perf_counter() - start)
                        progress.advance(len(order))
                figures["latency_ms"] = {
                    f"{tool} | {via}": summarize(values, 1e3)
                    for (tool, via), values in samples.items()
                }
                # CPU per call (load-insensitive): the bench process (harness, or the
                # MCP client) plus, through MCP, the server process.
                servers = {era: _pid_of(f"bench-{ERAS[era]}-{os.getpid()}") for era in ERAS}
                cpu: dict[str, float] = {}
                with Progress("mcp", "cpu per call", len(cases)) as progress:
                    for (tool, via), call in cases.items():
                        era = via.removeprefix("mcp ") if via != "harness" else None
                        server = servers.get(era) if era else None
                        own, theirs = time.process_time(), _cpu_seconds(server)
                        for _ in range(rounds):
                            await call()
                        spent = time.process_time() - own + _cpu_seconds(server) - theirs
                        cpu[f"{tool} | {via}"] = spent / rounds * 1e3
                        progress.advance()
                figures["cpu_ms_per_call"] = cpu
                added: dict[str, Any] = {}
                for tool in TOOLS:
                    base = samples[(tool, "harness")]
                    for era in ERAS:
                        over = samples[(tool, f"mcp {era}")]
                        diffs = [m - h for m, h in zip(over, base, strict=True)]
                        added[f"{tool} | {era}"] = summarize(diffs, 1e3)
                figures["added_ms"] = added

                throughput: dict[str, Any] = {}
                with Progress("mcp", "throughput", len(TOOLS) * len(ERAS) * 2) as progress:
                    for tool in TOOLS:
                        for era in ERAS:
                            call = cases[(tool, f"mcp {era}")]
                            for width in (1, callers):
                                done = 0

                                async def caller(call: Callable[[], Awaitable[Any]] = call) -> None:
                                    nonlocal done
                                    while True:
                                        await call()
                                        done += 1

                                start = time.perf_counter()
                                with trio.move_on_after(seconds):
                                    async with trio.open_nursery() as nursery:
                                        for _ in range(width):
                                            nursery.start_soon(caller)
                                elapsed = time.perf_counter() - start
                                throughput[f"{tool} | {era} | {width}"] = done / elapsed
                                progress.advance()
                figures["calls_per_s"] = throughput
                checks.append(
                    Check(
                        "mcp: every bash true through MCP exited 0",
                        not bad,
                        bad[0][:200] if bad else "",
                    )
                )
                # A write outside the root through MCP is refused, and nothing is written.
                outside = ctx.scratch.dir("mcp-outside")
                refused = await modern.call_tool(
                    "bash", {"command": f"echo x > {outside}/escape.txt"}
                )
                escaped = os.path.exists(os.path.join(outside, "escape.txt"))  # noqa: ASYNC240
                checks.append(
                    Check(
                        "mcp: a write outside the root is denied through MCP",
                        bool(refused.structured_content.get("denied")) and not escaped,
                        "" if not escaped else "escape.txt was written",
                    )
                )
                await session.close()
    finally:
        if previous is None:
            os.environ.pop("STOCKADE_STATE_DIR", None)
        else:
            os.environ["STOCKADE_STATE_DIR"] = previous
    figures["checks"] = checks
    return figures


def _pid_of(marker: str) -> int | None:
    """The pid of this process's child whose command line carries `marker`."""
    me = str(os.getpid())
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                ppid = stat.read().rsplit(")", 1)[1].split()[1]
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                argv = cmdline.read()
        except OSError:
            continue
        if ppid == me and marker.encode() in argv:
            return int(entry)
    return None


def _cpu_seconds(pid: int | None) -> float:
    """User + system CPU of `pid` (every thread, living or gone), 0 when unknown."""
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(ctx: Context) -> FamilyResult:
    import trio

    result = FamilyResult("mcp")
    try:
        import mcp  # noqa: F401
    except ImportError:
        result.skip("the MCP SDK is missing: pip install -e '.[mcp]'")
        return result
    if not ctx.backends.get("selected"):
        result.skip("no usable sandbox backend: the default composition confines")
        return result
    rounds, seconds, callers = (20, 0.5, 8) if ctx.quick else (300, 3.0, 16)
    figures = trio.run(_measure, ctx, rounds, seconds, callers)
    result.checks += figures.pop("checks")
    result.figures.update(figures)

    rows = []
    for name, summary in figures["latency_ms"].items():
        tool, via = name.split(" | ")
        rows.append([tool, via, summary["n"], summary["median"], summary["p10"], summary["p90"]])
    result.tables.append(
        Table(
            "One tool call: through the harness in-process vs through stockade mcp (stdio)",
            ["tool", "via", "n", "median ms", "p10 ms", "p90 ms"],
            rows,
            "Interleaved rounds in shuffled order; the MCP client is the SDK's own, in "
            "the bench process (Trio), the server a `stockade mcp` subprocess.",
        )
    )
    rows = []
    for name, summary in figures["added_ms"].items():
        tool, era = name.split(" | ")
        rows.append([tool, era, summary["median"], summary["p10"], summary["p90"]])
    result.tables.append(
        Table(
            "Added latency of MCP per call (per-round difference, MCP minus harness)",
            ["tool", "protocol", "median ms", "p10 ms", "p90 ms"],
            rows,
        )
    )
    rows = []
    cpu = figures["cpu_ms_per_call"]
    for tool in TOOLS:
        base = cpu[f"{tool} | harness"]
        for era in ERAS:
            spent = cpu[f"{tool} | mcp {era}"]
            rows.append([tool, era, base, spent, spent - base])
    result.tables.append(
        Table(
            "CPU per call (ms): the bench process, plus the server process through MCP",
            ["tool", "protocol", "harness", "through MCP", "added"],
            rows,
            "User + system time over sequential calls; it does not depend on the machine's "
            "load the way wall time does (the server's share is counted in 10 ms ticks).",
        )
    )
    rows = []
    for name, per_s in figures["calls_per_s"].items():
        tool, era, width = name.split(" | ")
        rows.append([tool, era, int(width), per_s])
    result.tables.append(
        Table(
            f"Tool calls per second on one connection ({seconds:g} s each)",
            ["tool", "protocol", "callers", "calls/s"],
            rows,
        )
    )
    worst = max(figures["added_ms"][f"bash true | {era}"]["median"] for era in ERAS)
    result.targets.append(
        Target(
            "added latency of a bash call through MCP (stdio) over the harness",
            f"< {TARGET_MS:g} ms median",
            f"{fmt(worst)} ms (worse era)",
            worst < TARGET_MS,
        )
    )
    return result
