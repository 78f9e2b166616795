"""Family `actors`: what one ask/reply costs, from a bare channel up to the real actors.

Sequential round trips, each timed alone (median and spread in microseconds), and
a concurrent run (C callers at once) for throughput:

- a bare Trio memory-channel ping-pong with a fresh one-shot reply channel per
  request (the floor: no stockade at all);
- `mailbox.request` against a trivial actor that replies inline;
- `mailbox.request` against a trivial actor that starts one task per request
  (`mailbox.answer`), what requests that may wait (a probe, a disk, a person) cost;
- the real actors with trivial work: `ProviderClient.confine` with the verdict
  cached, `ExecutorClient.list` (both answered in the inbox loop, like every
  request that cannot wait: the actor round trip), `SessionLogClient.read`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ._common import Context, FamilyResult, Progress, Table, Target, fmt, summarize


class Ping:
    """The trivial request."""

    __slots__ = ()


async def _trivial_actor(inbox_receive: Any, *, inline: bool, task_status: Any) -> None:
    """Replies "pong": inline in the inbox loop, or the way stockade's actors serve."""
    import outcome
    import trio

    from stockade.actors import mailbox as _mailbox

    async def pong() -> str:
        return "pong"

    async def serve(envelope: Any) -> None:
        await _mailbox.answer(envelope, pong)

    serve_forever = getattr(_mailbox, "serve_forever", None)
    if not inline and serve_forever is not None:
        # The actors' own inbox loop (one task per request), when this stockade has it.
        await serve_forever(inbox_receive, serve, task_status=task_status)
        return
    async with trio.open_nursery() as nursery, inbox_receive:
        task_status.started()
        async for envelope in inbox_receive:
            if inline:
                envelope.reply(outcome.Value("pong"))
            else:
                nursery.start_soon(serve, envelope)


async def _bare_server(receive: Any, *, task_status: Any) -> None:
    async with receive:
        task_status.started()
        async for reply_to in receive:
            reply_to.send_nowait("pong")
            reply_to.close()


async def _measure(ctx: Context, calls: int, concurrent: int, per_task: int) -> dict[str, Any]:
    import trio

    from stockade.actors.mailbox import open_inbox, request
    from stockade.executor.actor import open_executor
    from stockade.sandbox.actor import open_provider
    from stockade.sessionlog import MemoryStore, open_session_log
    from stockade.vocab import SandboxMode, SandboxPolicy

    root = ctx.scratch.dir("actors-root")
    results: dict[str, Any] = {}
    async with trio.open_nursery() as nursery:
        bare_send, bare_receive = trio.open_memory_channel[Any](0)
        await nursery.start(_bare_server, bare_receive)

        async def bare() -> Any:
            send, receive = trio.open_memory_channel[Any](1)
            with receive:
                await bare_send.send(send)
                return await receive.receive()

        inline_inbox, inline_mailbox = open_inbox()
        await nursery.start(
            lambda task_status: _trivial_actor(inline_mailbox, inline=True, task_status=task_status)
        )
        actor_inbox, actor_mailbox = open_inbox()
        await nursery.start(
            lambda task_status: _trivial_actor(actor_mailbox, inline=False, task_status=task_status)
        )

        cases: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
            ("trio channel ping-pong (floor, no stockade)", bare),
            ("mailbox.request, inline reply", lambda: request(inline_inbox, Ping())),
            (
                "mailbox.request + answer(), task per request (requests that wait)",
                lambda: request(actor_inbox, Ping()),
            ),
        ]

        async def serve_real(*, task_status: Any) -> None:
            async with (
                open_provider() as provider,
                open_executor(provider=provider) as executor,
                open_session_log(MemoryStore()) as log,
            ):
                task_status.started((provider, executor, log))
                await trio.sleep_forever()

        provider, executor, log = await nursery.start(serve_real)
        if ctx.backends["selected"]:
            policy = SandboxPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace_root=root)
            argv = ("bash", "-c", "true")
            await provider.confine(argv, policy)  # runs the probe once; cached from here on
            cases.append(
                (
                    f"ProviderClient.confine, cached ({ctx.backends['selected']})",
                    lambda: provider.confine(argv, policy),
                )
            )
        cases.append(("ExecutorClient.list (no jobs)", lambda: executor.list()))
        await log.open("bench")
        cases.append(("SessionLogClient.read (1 event)", lambda: log.read("bench")))
        from stockade.events import SessionHeader

        await log.append("bench", SessionHeader(cwd=root))

        total = len(cases) * (calls + concurrent * per_task)
        block = 250
        samples: dict[str, list[int]] = {name: [] for name, _ in cases}
        with Progress("actors", "round trips", total) as progress:
            for _name, call in cases:
                for _ in range(min(200, calls)):  # warm up
                    await call()
            # Blocks of calls, interleaved across the cases, so noise lands on all alike.
            for _ in range(max(1, calls // block)):
                for name, call in cases:
                    progress.label = name
                    own = samples[name]
                    for _ in range(block):
                        start = time.perf_counter_ns()
                        await call()
                        own.append(time.perf_counter_ns() - start)
                    progress.advance(block)
            for name, call in cases:
                progress.label = f"{name}, {concurrent} callers"

                async def caller(call: Callable[[], Awaitable[Any]] = call) -> None:
                    for _ in range(per_task):
                        await call()

                start = time.perf_counter()
                async with trio.open_nursery() as callers:
                    for _ in range(concurrent):
                        callers.start_soon(caller)
                elapsed = time.perf_counter() - start
                progress.advance(concurrent * per_task)
                own = samples[name]
                results[name] = {
                    "us": summarize(own, 1e-3),
                    "concurrent_callers": concurrent,
                    "concurrent_per_s": concurrent * per_task / elapsed,
                    "samples_us": [round(v / 1e3, 2) for v in own[:: max(1, len(own) // 2000)]],
                }
        nursery.cancel_scope.cancel()
    return results


def run(ctx: Context) -> FamilyResult:
    import trio

    result = FamilyResult("actors")
    calls = 2000 if ctx.quick else 20000
    concurrent, per_task = (50, 20) if ctx.quick else (100, 100)
    figures = trio.run(_measure, ctx, calls, concurrent, per_task)
    result.figures["cases"] = figures
    result.figures["pid"] = os.getpid()
    rows = []
    for name, entry in figures.items():
        us = entry["us"]
        rows.append(
            [
                name,
                us["n"],
                us["median"],
                f"{fmt(us['p10'])}-{fmt(us['p90'])}",
                us["p99"],
                1e6 / us["median"],
                entry["concurrent_per_s"],
            ]
        )
    result.tables.append(
        Table(
            "Ask/reply round trips (µs, one caller at a time; throughput with many)",
            [
                "round trip",
                "n",
                "median µs",
                "p10-p90",
                "p99",
                "sequential /s",
                f"{concurrent} callers /s",
            ],
            rows,
        )
    )
    actor = next(v for k, v in figures.items() if k.startswith("ExecutorClient.list"))
    median = actor["us"]["median"]
    result.targets.append(
        Target(
            "actor round trip (a real actor's request that cannot wait: ExecutorClient.list)",
            "< 30 µs median",
            f"{median:.1f} µs",
            median < 30,
        )
    )
    confine = next((v for k, v in figures.items() if k.startswith("ProviderClient.confine")), None)
    if confine:
        result.figures["confine_per_s"] = 1e6 / confine["us"]["median"]
    return result


def plot(result: FamilyResult, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = result.figures["cases"]
    names = list(cases)
    fig, ax = plt.subplots(figsize=(9, 0.5 * len(names) + 1.6))
    ax.boxplot(
        [cases[n]["samples_us"] for n in names],
        vert=False,
        whis=(10, 90),
        showfliers=False,
        widths=0.6,
    )
    ax.set_yticks(range(1, len(names) + 1), names, fontsize=8)
    ax.set_xscale("log")
    from matplotlib.ticker import ScalarFormatter

    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(ScalarFormatter())
    ax.tick_params(axis="x", which="both", labelsize=7)
    ax.axvline(30, color="#d62728", linestyle="--", linewidth=1, label="target: 30 µs")
    ax.set_xlabel("µs per round trip (box = IQR, whiskers = p10/p90; log scale)")
    ax.set_title("Actor round trips, one caller at a time")
    ax.legend(fontsize=8)
    ax.grid(axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
