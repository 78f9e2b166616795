"""Real kernel, both backends and unconfined: each limit holds a command as its facts
say (issue 26), and the end names the limit. Every hog and fork loop runs with its
limit already in force and under a timeout; counts are read from the host's side."""

from __future__ import annotations

import os
import re
import textwrap
import time

import pytest
import trio

from stockade.executor.config import ExecutorConfig
from stockade.limits import Limits, SessionLimits
from stockade.limits.cgroups import detect
from stockade.vocab import ExecutionPolicy, SandboxMode

from ..support import IN_CI, executor_on, pids_named, pids_with_marker

BACKENDS = [None, "landlock", "bwrap"]
MIB = 1 << 20


@pytest.fixture(autouse=True)
def _cgroups_here():
    host = detect()
    if not {"pids", "memory"} <= host.controllers:
        message = f"no writable pids and memory cgroups here: {host.reason}"
        if IN_CI:
            pytest.fail(f"CI=true and cgroups are missing: {message}")
        pytest.skip(message)


def _policy(tmp_path, backend):
    mode = SandboxMode.DANGER_FULL_ACCESS if backend is None else SandboxMode.WORKSPACE_WRITE
    return ExecutionPolicy(mode=mode, workspace_root=str(tmp_path))


async def _run(tmp_path, backend, command, limits, **kwargs):
    config = ExecutorConfig(
        limits=limits, session_limits=SessionLimits(memory=None), kill_grace=0.2
    )
    policy = _policy(tmp_path, backend)
    async with executor_on(backend, config) as executor:
        return await executor.run(executor.resolve(command, policy=policy, **kwargs))


def _claim(result, name):
    return next(claim for claim in result.limits if claim.name == name)


def _free_memory() -> int:
    with open("/proc/meminfo") as meminfo:
        return int(re.search(r"MemAvailable:\s+(\d+)", meminfo.read())[1]) * 1024


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_fork_loop_cannot_pass_processes(tmp_path, backend):
    marker = f"stockade-forks-{os.getpid()}-{backend}"
    # Forks sleepers until the kernel refuses, then reports how many it had.
    script = textwrap.dedent(
        f"""
        import os, sys, time
        made = 0
        try:
            while made < 200:
                if os.fork() == 0:
                    os.execvp("sleep", ["{marker}", "30"])
                made += 1
        except OSError:
            pass
        print(made)
        sys.exit(3)
        """
    )
    seen: list[int] = []

    async def count_from_the_host():
        while True:
            seen.append(len(pids_named(marker)))
            await trio.sleep(0.02)

    limits = Limits(processes=20, memory=None)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(count_from_the_host)
        command = f"exec -a {marker} sleep 30 & python3 -c '{script}'; s=$?; kill %1; exit $s"
        with trio.fail_after(60):
            result = await _run(tmp_path, backend, command, limits, timeout=30)
        nursery.cancel_scope.cancel()
    made = int(result.stdout.split()[-1])
    assert 0 < made < 20, result
    # Sleepers seen from the host: never more than the limit (bash and python count too).
    assert 0 < max(seen) < 20, max(seen)
    assert result.cause == "limit" and result.limit is not None, result
    assert result.limit.name == "processes" and result.limit.value == 20
    assert result.limit.scope == "command"  # its own limit, not its session's
    assert result.note == "[sandbox: the processes limit of 20 refused new processes]"
    assert (_claim(result, "processes").mechanism, _claim(result, "processes").claim) == (
        "cgroup-v1",
        "enforced" if backend else "partial",
    )
    assert pids_with_marker(marker) == []  # nothing of it outlives the call


@pytest.mark.parametrize("backend", BACKENDS)
async def test_an_allocation_past_memory_is_stopped(tmp_path, backend):
    before = _free_memory()
    lowest = [before]

    async def watch():
        while True:
            lowest.append(_free_memory())
            await trio.sleep(0.01)

    limits = Limits(memory=64 * MIB)
    # Touches 512 MiB page by page: the limit must stop it long before.
    command = "python3 -c 'b = bytearray(512 << 20); print(len(b))'"
    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch)
        with trio.fail_after(60):
            result = await _run(tmp_path, backend, command, limits, timeout=30)
        nursery.cancel_scope.cancel()
    assert result.exit_code == 137 and result.stdout == "", result
    assert result.cause == "limit" and result.limit.name == "memory", result
    assert result.limit.scope == "command"
    assert result.note == "[sandbox: stopped at the memory limit of 64 MiB]"
    assert result.usage.memory_peak <= 64 * MIB
    # The host's free memory went no lower than the limit (and other processes' noise).
    assert min(lowest) > before - 64 * MIB - 256 * MIB, (before, min(lowest))
    assert _claim(result, "memory").mechanism == "cgroup-v1"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_busy_loop_is_stopped_at_cpu_seconds(tmp_path, backend):
    limits = Limits(cpu_seconds=1, memory=None)
    started = time.monotonic()
    with trio.fail_after(60):
        result = await _run(tmp_path, backend, "while :; do :; done", limits, timeout=30)
    assert time.monotonic() - started < 20
    assert result.cause == "limit" and result.limit.name == "cpu_seconds", result
    assert result.note == "[sandbox: stopped at the cpu_seconds limit of 1 s]"
    # RLIMIT_CPU samples at the tick, the cgroup counts exactly: they differ under load.
    assert result.usage.cpu_seconds >= 0.5
    assert _claim(result, "cpu_seconds").claim == "enforced"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_file_past_file_size_is_refused(tmp_path, backend):
    limits = Limits(file_size=MIB, memory=None)
    command = "head -c 4M /dev/zero > big; echo after"
    result = await _run(tmp_path, backend, command, limits, timeout=30)
    assert (tmp_path / "big").stat().st_size == MIB  # on disk: cut at the limit
    # bash dies of SIGXFSZ writing past it, or the write fails (EFBIG).
    assert result.cause in ("limit", "exited"), result
    if result.cause == "limit":
        assert result.limit.name == "file_size"
    assert _claim(result, "file_size").mechanism == "rlimit"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_open_files_bounds_each_process(tmp_path, backend):
    limits = Limits(open_files=64, memory=None)
    command = (
        'python3 -c \'import os\nfds=[]\ntry:\n while True: fds.append(os.open("/dev/null", 0))'
        "\nexcept OSError as e: print(len(fds), e.errno)'"
    )
    result = await _run(tmp_path, backend, command, limits, timeout=30)
    opened, errno_ = map(int, result.stdout.split())
    assert opened < 64 and errno_ == 24, result  # EMFILE
    assert _claim(result, "open_files").claim == "enforced"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_output_bytes_cuts_the_capture_and_says_so(tmp_path, backend):
    config_limits = Limits(output_bytes=64 * 1024, memory=None)
    config = ExecutorConfig(limits=config_limits, output_cap=64 * 1024)
    policy = _policy(tmp_path, backend)
    command = "head -c 1M /dev/zero | tr '\\0' x"
    async with executor_on(backend, config) as executor:
        result = await executor.run(executor.resolve(command, policy=policy))
    # Its head and tail are kept (a line between them says where the middle went).
    assert result.stdout_dropped == MIB - 64 * 1024, result.stdout_dropped
    assert result.stdout.count("x") == 64 * 1024
    assert result.cause == "exited" and result.exit_code == 0
    assert "output_bytes limit of 64 KiB" in (result.note or "")


@pytest.mark.parametrize("backend", BACKENDS)
async def test_wall_seconds_is_the_timeout(tmp_path, backend):
    config = ExecutorConfig(default_timeout=0.5, kill_grace=0.2)
    policy = _policy(tmp_path, backend)
    async with executor_on(backend, config) as executor:
        result = await executor.run(executor.resolve("sleep 30", policy=policy))
    assert result.timed_out and result.cause == "timeout", result
    assert result.limit is not None and result.limit.name == "wall_seconds"
    assert result.limit.value == 0.5


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_plain_end_says_exited_and_what_it_used(tmp_path, backend):
    result = await _run(tmp_path, backend, "echo hi; exit 3", Limits.defaults())
    assert (result.exit_code, result.cause, result.limit, result.note) == (3, "exited", None, None)
    assert result.usage is not None and result.usage.processes_peak >= 1
    names = [claim.name for claim in result.limits]
    assert names == [
        "processes",
        "memory",
        "cpu_seconds",
        "wall_seconds",
        "output_bytes",
        "file_size",
        "open_files",
    ]


@pytest.mark.parametrize("backend", ["landlock", "bwrap"])
async def test_other_sessions_run_on_beside_a_command_at_its_processes_limit(tmp_path, backend):
    marker = f"stockade-held-forks-{os.getpid()}-{backend}"
    config = ExecutorConfig(limits=Limits(processes=10, memory=None))
    policy = _policy(tmp_path, backend)
    # Keeps forking sleepers (bash retries a refused fork) until it is killed.
    loop = f"while :; do (exec -a {marker} sleep 30) & done"
    async with executor_on(backend, config) as executor:
        job = await executor.start(executor.resolve(loop, policy=policy, owner="s1"))
        with trio.fail_after(20):
            while len(pids_named(marker)) < 8:
                await trio.sleep(0.02)
        result = await executor.run(executor.resolve("echo alive", policy=policy, owner="s2"))
        assert (result.exit_code, result.stdout) == (0, "alive\n")
        assert len(pids_named(marker)) < 10
        report = await executor.kill(job.id, owner="s1")
    assert report.cause == "killed" and report.limit is None, report
    assert "processes limit of 10 refused" in (report.note or "")
    assert pids_named(marker) == []
