"""Run a batch of calls through the real provider and executor, as this process's user.

The precision table runs it in-process (as root) and as `python -m
tests.precision._runner` under uid/gid 65534 (the unprivileged caller): JSON in on
stdin, JSON out on stdout. Only what a caller of the executor sees is reported.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import trio

from stockade.executor.actor import open_executor
from stockade.executor.config import ExecutorConfig
from stockade.sandbox.actor import open_provider
from stockade.sandbox.config import ProviderConfig
from stockade.vocab import ExecutionPolicy, SandboxMode


async def run_calls(backend: str, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each call: command, mode, root, workdir, job (run as a background job)."""
    results = []
    plain = backend == "landlock-plain"
    config = ProviderConfig(
        backend="landlock" if plain else backend, landlock_tier="plain" if plain else "auto"
    )
    async with (
        open_provider(config) as provider,
        open_executor(ExecutorConfig(kill_grace=0.5, default_timeout=60), provider) as executor,
    ):
        for call in calls:
            policy = ExecutionPolicy(
                mode=SandboxMode.parse(call["mode"]), workspace_root=call["root"]
            )
            spec = executor.resolve(call["command"], policy=policy, workdir=call["workdir"])
            if call.get("job"):
                handle = await executor.start(spec)
                report = await executor.wait(handle.id)
                outcome = {
                    "exit_code": report.exit_code,
                    "stdout": report.stdout,
                    "stderr": report.stderr,
                    "denied": report.denied,
                    "read_denied": report.read_denied,
                    "backend": report.backend,
                }
            else:
                result = await executor.run(spec)
                outcome = {
                    "exit_code": result.exit_code,
                    "stdout": result.stdout,
                    "stderr": result.stderr,
                    "denied": result.denied,
                    "read_denied": result.read_denied,
                    "backend": result.backend,
                }
            results.append(outcome)
    return results


def main() -> None:
    request = json.load(sys.stdin)
    results = trio.run(run_calls, request["backend"], request["calls"])
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
