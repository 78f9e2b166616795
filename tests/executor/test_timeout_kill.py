"""A command that outlives its timeout is killed, whatever it does with SIGTERM, and
the result says how it ended (issue: the kill after SIGTERM was cancelled along with
the stdin feeder, so a command ignoring SIGTERM ran on, and a slow death was reported
with no exit status)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stockade.executor.actor import open_executor
from stockade.executor.config import ExecutorConfig
from stockade.sandbox.actor import open_provider
from stockade.vocab import ExecutionPolicy, SandboxMode

from ..support import pids_named, require_backend


@pytest.mark.parametrize("backend", [None, "landlock", "bwrap"])
@pytest.mark.parametrize("stdin", [None, b"input nobody reads\n"])
async def test_a_command_ignoring_sigterm_is_killed_at_its_timeout(tmp_path, backend, stdin):
    name = f"stockade-ignores-term-{os.getpid()}-{backend}-{stdin is None}"
    command = f"trap '' TERM; echo before; exec -a {name} sleep 30"
    policy = ExecutionPolicy(
        mode=SandboxMode.DANGER_FULL_ACCESS if backend is None else SandboxMode.WORKSPACE_WRITE,
        workspace_root=str(tmp_path),
    )
    config = ExecutorConfig(kill_grace=0.2)
    if backend is None:
        async with open_executor(config) as executor:
            result = await executor.run(
                executor.resolve(command, policy=policy, timeout=0.5, stdin=stdin)
            )
    else:
        async with (
            open_provider(require_backend(backend)) as provider,
            open_executor(config, provider) as executor,
        ):
            result = await executor.run(
                executor.resolve(command, policy=policy, timeout=0.5, stdin=stdin)
            )
    # SIGKILL ends the command itself; under bwrap the runner, which does not ignore
    # SIGTERM, dies of it first and its PID namespace takes the command down.
    killed = (128 + 9, 128 + 15) if backend == "bwrap" else (128 + 9,)
    assert result.timed_out and result.exit_code in killed, result
    assert result.stdout == "before\n"
    assert pids_named(name) == []  # gone when the call returns


def test_a_group_of_zombies_is_gone_and_a_live_member_is_not():
    """A killed command is waited for until its process group is empty; a zombie whose
    parent never reaps it (a container's bare init) must not hold the call."""
    import subprocess
    import time

    from stockade.executor._spawn import _group_alive

    live = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        assert _group_alive(live.pid)
        live.kill()
        deadline = time.monotonic() + 10
        stat = Path(f"/proc/{live.pid}/stat")
        while stat.read_text().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert not _group_alive(live.pid)  # only a zombie is left, unreaped
    finally:
        live.kill()
        live.wait()
    assert not _group_alive(live.pid)
