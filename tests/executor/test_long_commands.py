"""A command may run longer than trio keeps an idle worker thread (10 s): the thread
that forked its runner must not retire under it. Both runners ask for a parent-death
signal, which the kernel sends when the forking THREAD exits; when trio's worker
threads forked them, every such command was SIGKILLed at 10 s (exit 137, no output,
no cause: the 3,000-job exit 137 of FACTS.md). The executor now forks from the event
loop's own thread (`executor._child`); this holds it to that."""

from __future__ import annotations

import time

import trio

from stockade.executor.config import ExecutorConfig
from stockade.vocab import ExecutionPolicy, SandboxMode

from ..support import executor_on

# Past trio's IDLE_TIMEOUT (10 s) with a margin; nothing else runs in the harness
# meanwhile, so a worker thread that had spawned the runner would idle the whole time.
LONGER_THAN_A_THREAD_IDLES = 12


async def test_a_command_outlives_the_idle_timeout_of_its_spawning_thread(tmp_path):
    results = {}

    async def one(backend):
        mode = SandboxMode.DANGER_FULL_ACCESS if backend is None else SandboxMode.WORKSPACE_WRITE
        policy = ExecutionPolicy(mode=mode, workspace_root=str(tmp_path))
        command = f"sleep {LONGER_THAN_A_THREAD_IDLES}; echo done"
        async with executor_on(backend, ExecutorConfig()) as executor:
            began = time.monotonic()
            result = await executor.run(executor.resolve(command, policy=policy))
            results[backend] = (result, time.monotonic() - began)

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            for backend in (None, "landlock", "bwrap"):
                nursery.start_soon(one, backend)
    for backend, (result, took) in results.items():
        assert (result.exit_code, result.stdout, result.cause) == (0, "done\n", "exited"), (
            backend,
            result,
        )
        assert took >= LONGER_THAN_A_THREAD_IDLES
