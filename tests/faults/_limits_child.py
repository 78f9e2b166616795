"""Run a harness under a lowered RLIMIT_NOFILE, in its own process (test_resource_limits).

_limits_child.py SOFT SCENARIO[,SCENARIO...] STATE_DIR PROJECT

Sets the soft descriptor limit first; then, for each scenario in turn, opens the
sandboxed composition (a fresh harness, so a fresh probe) and runs it. Prints one
JSON object mapping each scenario to what each of its calls returned (never a
traceback; an exception escaping a call is reported as `raised`).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import time
from typing import Any


def limit(soft: int) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def exhaust() -> list[int]:
    """Hold every free descriptor."""
    held = []
    try:
        while True:
            held.append(os.open("/dev/null", os.O_RDONLY))
    except OSError:
        pass
    return held


def release(held: list[int]) -> None:
    for fd in held:
        os.close(fd)
    held.clear()


async def call(session: Any, arguments: dict[str, Any]) -> dict[str, Any]:
    try:
        result = await session.run_tool("bash", arguments)
    except BaseException as error:  # reported; the test decides
        return {"raised": f"{type(error).__name__}: {error}"}
    return {"is_error": result.is_error, "text": result.text}


async def burst(session: Any, count: int) -> list[dict[str, Any]]:
    import trio

    results: list[dict[str, Any]] = [{}] * count

    async def one(index: int) -> None:
        arguments = {"command": f"sleep 0.3; echo {index}", "background": index % 2 == 0}
        results[index] = await call(session, arguments)

    async with trio.open_nursery() as nursery:
        for index in range(count):
            nursery.start_soon(one, index)
    return results


async def scenario(name: str, state_dir: str, project: str) -> dict[str, Any]:
    from stockade import open_harness
    from stockade.executor.config import ExecutorConfig

    entries = [
        {"id": "sandbox", "name": "stockade.sandbox.local"},
        {"id": "bash", "name": "stockade.bash.sandbox"},
        {"id": "log", "name": "stockade.session.log", "config": {"state_dir": state_dir}},
    ]
    out: dict[str, Any] = {"bound": ExecutorConfig().running_bound()}
    started = time.monotonic()
    async with open_harness(entries, cwd=project) as harness:
        session = await harness.open_session(cwd=project)
        out["fds_open"] = len(os.listdir("/proc/self/fd"))
        if name == "burst":
            out["first"] = await call(session, {"command": "echo probed"})
            out["burst"] = await burst(session, 20)
            out["after"] = await call(session, {"command": "echo after"})
        elif name == "exhausted":
            out["first"] = await call(session, {"command": "echo probed"})
            held = exhaust()
            out["held"] = len(held)
            out["foreground"] = await call(session, {"command": "touch fg-ran"})
            out["background"] = await call(session, {"command": "touch bg-ran", "background": True})
            release(held)
            out["after"] = await call(session, {"command": "echo after"})
        elif name in ("probe-exhausted", "probe-exhausted-fresh"):
            if name == "probe-exhausted":
                # A host that used tempfile before has its temp dir cached already.
                tempfile.gettempdir()
            held = exhaust()
            out["held"] = len(held)
            out["first"] = await call(session, {"command": "echo first"})
            release(held)
            out["after"] = await call(session, {"command": "echo after"})
        else:
            raise SystemExit(f"unknown scenario {name}")
    out["seconds"] = time.monotonic() - started
    return out


def main() -> None:
    soft, names, state_dir, project = sys.argv[1:5]
    limit(int(soft))
    import trio

    outs = {name: trio.run(scenario, name, state_dir, project) for name in names.split(",")}
    print(json.dumps(outs), flush=True)


if __name__ == "__main__":
    main()
