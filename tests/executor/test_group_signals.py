"""Every signal the executor sends a command's process group reaches that command's
group: it is sent while the leader is unreaped (alive or a zombie), so its pid, the
group's id, cannot have been given to another process (issue 26: at 3,000 overlapping
jobs, pid_max 32,768, a group signalled after its leader was reaped was another job's,
which ended with exit 137, no output and no cause)."""

from __future__ import annotations

import os

import pytest
import trio

from stockade.executor import _spawn
from stockade.executor.config import ExecutorConfig
from stockade.vocab import ExecutionPolicy, SandboxMode

from ..support import executor_on


def _start_time(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat (when the process started): which process the pid
    names now, zombies included; None when no process has it."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[19].decode()
    except OSError:
        return None


def _state(pid: int) -> bytes:
    with open(f"/proc/{pid}/stat", "rb") as stat:
        return stat.read().rsplit(b")", 1)[1].split()[0]


@pytest.fixture
def signals(monkeypatch):
    """(pgid, signal, the leader's start time when spawned, the pid's start time when
    signalled) for every group signal `_spawn` sends."""
    sent: list[tuple[int, int, str | None, str | None]] = []
    spawned: dict[int, str | None] = {}
    real_spawn, real_signal = _spawn.spawn, _spawn.signal_group

    async def spawn(*args, **kwargs):
        process = await real_spawn(*args, **kwargs)
        spawned[process.pid] = _start_time(process.pid)
        return process

    def signal_group(pgid: int, signum: int) -> None:
        sent.append((pgid, signum, spawned.get(pgid), _start_time(pgid)))
        real_signal(pgid, signum)

    monkeypatch.setattr(_spawn, "signal_group", signal_group)
    # The executor imported `spawn` by name.
    from stockade.executor import actor

    monkeypatch.setattr(actor, "spawn", spawn)
    return sent


def _policy(tmp_path, backend):
    mode = SandboxMode.DANGER_FULL_ACCESS if backend is None else SandboxMode.WORKSPACE_WRITE
    return ExecutionPolicy(mode=mode, workspace_root=str(tmp_path))


@pytest.mark.parametrize("backend", [None, "landlock", "bwrap"])
async def test_group_signals_reach_the_commands_own_group(tmp_path, backend, signals):
    config = ExecutorConfig(kill_grace=0.2)
    policy = _policy(tmp_path, backend)

    async def calls(executor):
        # Ends on its own; outlives its timeout; its job killed; cancelled mid-run.
        await executor.run(executor.resolve("echo done", policy=policy))
        await executor.run(executor.resolve("sleep 30", policy=policy, timeout=0.3))
        handle = await executor.start(executor.resolve("sleep 30", policy=policy))
        await trio.sleep(0.2)
        await executor.kill(handle.id)
        with trio.move_on_after(0.3):
            await executor.run(executor.resolve("sleep 30", policy=policy))

    async with executor_on(backend, config) as executor:
        await calls(executor)
    assert len({pgid for pgid, *_ in signals}) == 4, signals
    for pgid, signum, spawned, signalled in signals:
        # The same process as spawned, unreaped: no other process can hold that pid.
        assert spawned is not None and signalled == spawned, (pgid, signum)


async def test_a_leader_is_reaped_only_after_its_group_is_signalled(tmp_path):
    """The leader's exit is seen without reaping it (its pidfd), and reaped after."""
    process = await _spawn.spawn(
        ["sh", "-c", "exit 3"], cwd=str(tmp_path), env=dict(os.environ), with_stdin=False
    )
    await _spawn.leader_exited(process)
    assert _state(process.pid) == b"Z"  # a zombie, still ours
    await _spawn.reap(process)
    assert process.returncode == 3
    assert process.reaped and process.pidfd is None  # its pidfd let go with it
    for stream in (process.stdout, process.stderr):
        assert stream is not None
        await stream.aclose()
