"""Real kernel, both backends: a refusal by the session's limit is the session's, and
one by the command's own limit the command's (issue 35, hole 7). The host judges:
the sleepers a fork loop made are counted from outside, and the counters read back
from the groups' files are the kernel's own.

Before the fix, a session of `processes: 8` refused the 9th fork and the result said
"the processes limit of 512 refused new processes", `limit: {processes, 512, used: 9}`:
the command's pids.events counts every refusal of its forks, whichever group's limit
made it."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import msgspec
import pytest
import trio

from stockade import open_harness
from stockade.executor import render_result
from stockade.executor.config import ExecutorConfig
from stockade.limits import Limits, SessionLimits
from stockade.limits.cgroups import detect
from stockade.messages import LimitHit
from stockade.vocab import ExecutionPolicy, SandboxMode

from ..support import IN_CI, executor_on, pids_named, pids_with_marker

BACKENDS = ["landlock", "bwrap"]
PYTHON = os.path.realpath(sys._base_executable)
MIB = 1 << 20
SESSION_NOTE = (
    "[sandbox: the session's processes limit of 8 refused new processes "
    "(all its commands together)]"
)


@pytest.fixture(autouse=True)
def _cgroups_here():
    host = detect()
    if not {"pids", "memory"} <= host.controllers:
        message = f"no writable pids and memory cgroups here: {host.reason}"
        if IN_CI:
            pytest.fail(f"CI=true and cgroups are missing: {message}")
        pytest.skip(message)


def _fork_loop(marker: str) -> str:
    """Forks sleepers named `marker` until the kernel refuses, prints how many it had,
    ends them, and exits 3 (a failure of its own, as a build whose fork failed). The
    interpreter itself, not a shim that would fork on the way."""
    script = textwrap.dedent(
        f"""
        import os, signal, sys
        made = []
        try:
            while len(made) < 200:
                pid = os.fork()
                if pid == 0:
                    os.execvp("sleep", ["{marker}", "30"])
                made.append(pid)
        except OSError:
            pass
        print(len(made))
        for pid in made:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        sys.exit(3)
        """
    )
    return f"{PYTHON} -c '{script}'"


async def _run_counting(executor, command: str, marker: str, policy) -> tuple[object, int]:
    """The result of `command`, and the most sleepers named `marker` seen at once from
    the host while it ran."""
    seen = [0]

    async def count_from_the_host():
        while True:
            seen.append(len(pids_named(marker)))
            await trio.sleep(0.02)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(count_from_the_host)
        with trio.fail_after(60):
            result = await executor.run(executor.resolve(command, policy=policy, timeout=30))
        nursery.cancel_scope.cancel()
    return result, max(seen)


def _policy(tmp_path) -> ExecutionPolicy:
    return ExecutionPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace_root=str(tmp_path))


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_refusal_by_the_sessions_processes_limit_is_the_sessions(tmp_path, backend):
    marker = f"stockade-session-forks-{os.getpid()}-{backend}"
    config = ExecutorConfig(
        limits=Limits(memory=None),  # the command's own: 512 processes
        session_limits=SessionLimits(processes=8, memory=None),
        kill_grace=0.2,
    )
    async with executor_on(backend, config) as executor:
        result, most = await _run_counting(executor, _fork_loop(marker), marker, _policy(tmp_path))
    made = int(result.stdout.split()[-1])
    # The runner's two processes, bash and python count too: 8 in all, never more.
    assert 0 < made < 8 and most <= made, (made, most, result)
    assert result.cause == "limit", result
    assert result.limit == LimitHit(name="processes", value=8, used=8, scope="session")
    assert result.note == SESSION_NOTE
    text = render_result(result)
    assert SESSION_NOTE in text and "limit of 512" not in text
    assert pids_with_marker(marker) == []


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_refusal_by_the_commands_own_limit_stays_the_commands(tmp_path, backend):
    """The control: the same loop under a command limit of 20 and the session's default
    of 8192: the command's own limit refused, and the result says so."""
    marker = f"stockade-command-forks-{os.getpid()}-{backend}"
    config = ExecutorConfig(
        limits=Limits(processes=20, memory=None),
        session_limits=SessionLimits(memory=None),
        kill_grace=0.2,
    )
    async with executor_on(backend, config) as executor:
        result, most = await _run_counting(executor, _fork_loop(marker), marker, _policy(tmp_path))
    made = int(result.stdout.split()[-1])
    assert 8 < made < 20 and most <= made, (made, most, result)
    assert result.cause == "limit", result
    assert result.limit.scope == "command" and result.limit.value == 20, result.limit
    assert result.limit.used is not None and result.limit.used <= 22
    assert result.note == "[sandbox: the processes limit of 20 refused new processes]"
    assert "session" not in render_result(result)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_an_oom_kill_at_the_sessions_memory_limit_is_the_sessions(tmp_path, backend):
    config = ExecutorConfig(
        limits=Limits(),  # the command's own: half of MemTotal
        session_limits=SessionLimits(memory=64 * MIB),
        kill_grace=0.2,
    )
    command = "python3 -c 'b = bytearray(512 << 20); print(len(b))'"
    async with executor_on(backend, config) as executor:
        with trio.fail_after(60):
            result = await executor.run(
                executor.resolve(command, policy=_policy(tmp_path), timeout=30)
            )
    assert result.exit_code == 137 and result.stdout == "", result
    assert result.cause == "limit", result
    assert (result.limit.name, result.limit.scope) == ("memory", "session"), result.limit
    assert result.limit.value == 64 * MIB and result.limit.used <= 64 * MIB
    note = "[sandbox: stopped at the session's memory limit of 64 MiB (all its commands together)]"
    assert result.note == note
    assert note in render_result(result)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_an_oom_kill_at_the_commands_memory_limit_stays_the_commands(tmp_path, backend):
    config = ExecutorConfig(
        limits=Limits(memory=64 * MIB), session_limits=SessionLimits(), kill_grace=0.2
    )
    command = "python3 -c 'b = bytearray(512 << 20); print(len(b))'"
    async with executor_on(backend, config) as executor:
        with trio.fail_after(60):
            result = await executor.run(
                executor.resolve(command, policy=_policy(tmp_path), timeout=30)
            )
    assert result.exit_code == 137, result
    assert result.limit == LimitHit(
        name="memory", value=64 * MIB, used=result.usage.memory_peak, scope="command"
    )
    assert result.note == "[sandbox: stopped at the memory limit of 64 MiB]"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_the_compositions_session_limit_is_named_to_the_model(scratch, backend):
    """The issue's reproduction, through a composition and the bash tool: the facts
    carry `limit: {scope: session, value: 8}` and the model reads the session's limit."""
    # The session log outside every root a command may write.
    state, project = Path(scratch) / "state", Path(scratch) / "project"
    state.mkdir()
    project.mkdir()
    marker = f"stockade-composed-forks-{os.getpid()}-{backend}"
    entries = [
        {"id": "sandbox", "name": "stockade.sandbox.local", "config": {"backend": backend}},
        {
            "id": "bash",
            "name": "stockade.bash.sandbox",
            "config": {"session_limits": {"processes": 8}, "limits": {"memory": None}},
        },
        {"id": "log", "name": "stockade.session.log", "config": {"state_dir": str(state)}},
    ]
    async with open_harness(entries) as harness:
        session = await harness.open_session(cwd=project)
        with trio.fail_after(60):
            called = await session.run_tool("bash", {"command": _fork_loop(marker)})
    facts = msgspec.to_builtins(called.facts)
    assert facts["cause"] == "limit", called
    assert facts["limit"] == {"name": "processes", "value": 8, "used": 8, "scope": "session"}
    assert SESSION_NOTE in called.text and "limit of 512" not in called.text
    assert pids_with_marker(marker) == []


async def _until_exists(path: Path) -> None:
    with trio.fail_after(20):
        while not path.exists():
            await trio.sleep(0.02)


def _group_line(result) -> str:
    """The memory or pids cgroup the command printed first (its own group)."""
    return result.stdout.splitlines()[0]


async def test_a_reused_group_judges_the_memory_refusal_of_its_own_call(scratch):
    """Landlock calls' groups serve the session's next call (docs/limits.md): the first
    call is stopped by its own memory limit, the second, in the same group, by the
    session's. Its group's failure count was reset when it was kept, so the second is
    the session's (without the reset, the first call's failures named the command)."""
    where = "grep -E ':memory:' /proc/self/cgroup"
    config = ExecutorConfig(
        limits=Limits(memory=64 * MIB),
        session_limits=SessionLimits(memory=80 * MIB),
        kill_grace=0.2,
    )
    policy = _policy(scratch)
    held = Path(scratch) / "held"
    # Grows to 20 MiB once the first call is over, and holds it.
    hold = (
        f"sleep 1.5; {PYTHON} -c 'import time; b = bytearray(20 << 20); "
        'open("held", "w").write("x"); time.sleep(30)\''
    )
    allocate = f"{where}; {PYTHON} -c 'b = bytearray(512 << 20)'"
    async with executor_on("landlock", config) as executor:
        holder = await executor.start(executor.resolve(hold, policy=policy, owner="s"))
        with trio.fail_after(60):
            first = await executor.run(executor.resolve(allocate, policy=policy, owner="s"))
            await _until_exists(held)
            second = await executor.run(executor.resolve(allocate, policy=policy, owner="s"))
        await executor.kill(holder.id, owner="s")
    assert _group_line(first) == _group_line(second)  # the same group, reused
    assert first.exit_code == second.exit_code == 137, (first, second)
    assert (first.limit.scope, first.limit.value) == ("command", 64 * MIB), first.limit
    assert (second.limit.scope, second.limit.value) == ("session", 80 * MIB), second.limit
    assert "session's memory limit of 80 MiB" in second.note


async def test_a_reused_group_judges_the_fork_refusal_of_its_own_call(scratch):
    """The same for processes: pids.peak cannot be reset, so a group an earlier call
    took to its limit cannot say it was full again; the session's group can, and the
    second call's refusal is the session's."""
    marker = f"stockade-reused-forks-{os.getpid()}"
    where = "grep -E ':pids:' /proc/self/cgroup; "
    config = ExecutorConfig(
        limits=Limits(processes=10, memory=None),
        session_limits=SessionLimits(processes=20, memory=None),
        kill_grace=0.2,
    )
    policy = _policy(scratch)
    held = Path(scratch) / "held"
    # Eight sleepers once the first call is over, held until it is killed.
    hold = (
        f"sleep 1.5; for i in 1 2 3 4 5 6 7 8; do (exec -a {marker} sleep 30) & done; "
        "touch held; wait"
    )
    async with executor_on("landlock", config) as executor:
        holder = await executor.start(executor.resolve(hold, policy=policy, owner="s"))
        with trio.fail_after(60):
            first = await executor.run(
                executor.resolve(where + _fork_loop(marker), policy=policy, owner="s")
            )
            await _until_exists(held)
            second = await executor.run(
                executor.resolve(where + _fork_loop(marker), policy=policy, owner="s")
            )
        await executor.kill(holder.id, owner="s")
    assert _group_line(first) == _group_line(second)  # the same group, reused
    assert int(second.stdout.split()[-1]) < int(first.stdout.split()[-1]), (first, second)
    assert first.limit == LimitHit(name="processes", value=10, used=12, scope="command")
    assert (second.limit.scope, second.limit.value, second.limit.used) == ("session", 20, 20)
    assert pids_with_marker(marker) == []
