"""Profile one hot path: `python -m bench.profile TARGET [--n N] [--tool cprofile|pyinstrument]`.

Targets:
  spawn-local     ExecutorClient.run("true") on the local executor
  spawn-landlock  the same through the Landlock provider
  spawn-bwrap     the same through the bwrap provider
  confine         ProviderClient.confine with the verdict cached
  roundtrip       mailbox.request against a trivial actor using answer()
  append          100 writers appending to one session (MemoryStore: no disk)
  replay          JsonlStore.open of a 10^5-event log

cProfile (the default, stdlib) prints the functions with the most own time; with
pyinstrument installed, `--tool pyinstrument` prints its call tree instead. This is
a tool for finding where the time goes, not part of `python -m bench`.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

TARGETS = (
    "spawn-local",
    "spawn-landlock",
    "spawn-bwrap",
    "confine",
    "roundtrip",
    "append",
    "replay",
)


async def _loop(
    target: str,
    n: int,
    root: str,
    profiled: Callable[[Callable[[], Awaitable[Any]]], Awaitable[None]],
) -> None:
    import outcome
    import trio

    from stockade.actors.mailbox import answer, open_inbox, request
    from stockade.executor.actor import open_executor
    from stockade.sandbox.actor import open_provider
    from stockade.sandbox.config import ProviderConfig
    from stockade.sessionlog import MemoryStore, open_session_log
    from stockade.vocab import ExecutionPolicy, SandboxMode, SandboxPolicy

    async with trio.open_nursery() as nursery:
        if target.startswith("spawn-"):
            backend = target.split("-", 1)[1]
            policy = ExecutionPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace_root=root)

            async def serve(*, task_status: Any) -> None:
                if backend == "local":
                    async with open_executor() as executor:
                        task_status.started(executor)
                        await trio.sleep_forever()
                async with (
                    open_provider(ProviderConfig(backend=backend)) as provider,
                    open_executor(provider=provider) as executor,
                ):
                    task_status.started(executor)
                    await trio.sleep_forever()

            executor = await nursery.start(serve)
            spec = executor.resolve("true", policy=policy)
            await executor.run(spec)

            async def call() -> None:
                await executor.run(spec)

        elif target == "confine":

            async def serve_provider(*, task_status: Any) -> None:
                async with open_provider() as provider:
                    task_status.started(provider)
                    await trio.sleep_forever()

            provider = await nursery.start(serve_provider)
            sandbox = SandboxPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace_root=root)
            await provider.confine(("bash", "-c", "true"), sandbox)

            async def call() -> None:
                await provider.confine(("bash", "-c", "true"), sandbox)

        elif target == "roundtrip":
            inbox, mailbox = open_inbox()

            async def pong() -> int:
                return 1

            async def actor(*, task_status: Any) -> None:
                async with trio.open_nursery() as inner, mailbox:
                    task_status.started()
                    async for envelope in mailbox:
                        inner.start_soon(answer, envelope, pong)

            await nursery.start(actor)
            _ = outcome

            async def call() -> None:
                await request(inbox, None)

        elif target == "append":
            from stockade.harness import harness_registry
            from stockade.tools.events import ToolCalled

            async def serve_log(*, task_status: Any) -> None:
                async with open_session_log(MemoryStore(registry=harness_registry())) as log:
                    task_status.started(log)
                    await trio.sleep_forever()

            log = await nursery.start(serve_log)
            await log.open("profile")
            event = ToolCalled(call_id="call-1", name="bash", arguments={"command": "ls"})

            async def call() -> None:
                async def writer() -> None:
                    for _ in range(10):
                        await log.append("profile", event)

                async with trio.open_nursery() as writers:
                    for _ in range(100):
                        writers.start_soon(writer)

            n = max(1, n // 100)
        else:
            raise SystemExit(f"unknown target {target}")

        async def many() -> None:
            for _ in range(n):
                await call()

        await profiled(many)
        nursery.cancel_scope.cancel()


def _replay(n: int, directory: str) -> Callable[[], None]:
    from stockade.harness import harness_registry
    from stockade.sessionlog import JsonlStore

    from .log import write_log

    registry = harness_registry()
    write_log(os.path.join(directory, "replay.jsonl"), n, registry, directory)
    store = JsonlStore(directory, registry=registry)

    def call() -> None:
        store.open("replay").handle.close()

    return call


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.profile",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("target", choices=TARGETS)
    parser.add_argument("--n", type=int, default=2000, help="iterations (events for replay)")
    parser.add_argument("--tool", choices=("cprofile", "pyinstrument"), default="cprofile")
    parser.add_argument("--top", type=int, default=25, help="rows of the cProfile table")
    parser.add_argument(
        "--sort", default="tottime", help="the cProfile table's order (tottime, cumtime, ...)"
    )
    parser.add_argument(
        "--only", default=None, help="keep the cProfile rows whose file matches this regex"
    )
    parser.add_argument(
        "--callers",
        default=None,
        help="also print who calls the functions matching this regex (cProfile)",
    )
    args = parser.parse_args(argv)

    scratch = tempfile.mkdtemp(prefix="stockade-profile-", dir="/var/tmp")
    profiler: Any
    if args.tool == "pyinstrument":
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.0002, async_mode="enabled")
    else:
        profiler = cProfile.Profile()
    try:
        started = time.perf_counter()
        if args.target == "replay":
            call = _replay(args.n if args.n != 2000 else 100_000, scratch)
            profiler.enable() if args.tool == "cprofile" else profiler.start()
            for _ in range(3):
                call()
            profiler.disable() if args.tool == "cprofile" else profiler.stop()
        else:
            import trio

            async def profiled(body: Callable[[], Awaitable[None]]) -> None:
                profiler.enable() if args.tool == "cprofile" else profiler.start()
                try:
                    await body()
                finally:
                    profiler.disable() if args.tool == "cprofile" else profiler.stop()

            trio.run(_loop, args.target, args.n, scratch, profiled)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    elapsed = time.perf_counter() - started
    sys.stdout.write(f"{args.target}: {args.n} iterations, {elapsed:.2f} s (profiled)\n")
    if args.tool == "pyinstrument":
        sys.stdout.write(profiler.output_text(unicode=True, color=False, show_all=False))
    else:
        out = io.StringIO()
        restrictions: tuple[str | int, ...] = (args.only, args.top) if args.only else (args.top,)
        stats = pstats.Stats(profiler, stream=out).sort_stats(args.sort)
        stats.print_stats(*restrictions)
        if args.callers:
            stats.print_callers(args.callers)
        sys.stdout.write(out.getvalue())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
