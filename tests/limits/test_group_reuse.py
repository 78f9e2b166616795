"""A session's empty command groups serve its next calls (issue 26's per-job cost), and
reuse never changes a fact: each call's usage, limit hits and cause are its own.

Real kernel: which group a command is in is what it reads in its own /proc/self/cgroup;
what is left is what the host's cgroup file system shows. Landlock calls' groups are
reused; bwrap's and unconfined calls' never are (see the last test).
"""

from __future__ import annotations

import os

import msgspec
import pytest

from stockade.executor._pool import POOL_CHARGE_LEFT, GroupPool, charge_allowed
from stockade.executor.config import ExecutorConfig
from stockade.limits import Limits, SessionLimits
from stockade.limits.cgroups import GroupUsage, detect
from stockade.vocab import ExecutionPolicy, SandboxMode

from ..support import IN_CI, executor_on

MIB = 1 << 20
WHERE = "grep -E ':memory:' /proc/self/cgroup"


def _reading(**changes) -> GroupUsage:
    base = GroupUsage(
        cpu_seconds=1.0,
        memory_peak=10 * MIB,
        processes_now=0,
        processes_peak=7,
        processes_refused=2,
        oom_kills=1,
        memory_now=64 << 10,
    )
    return msgspec.structs.replace(base, **changes)


def test_usage_since_a_reading_counts_only_what_came_after():
    before = _reading()
    after = _reading(
        cpu_seconds=1.25,
        memory_peak=(64 << 10) + 5 * MIB,
        processes_peak=7,
        processes_refused=2,
        oom_kills=1,
    )
    used = after.since(before)
    assert used.cpu_seconds == pytest.approx(0.25)
    assert used.memory_peak == 5 * MIB  # above what was charged at the reset
    # pids.peak cannot be reset: not above the earlier peak, so not known.
    assert used.processes_peak is None
    assert (used.processes_refused, used.oom_kills) == (0, 0)
    higher = _reading(processes_peak=9, processes_refused=5).since(before)
    assert higher.processes_peak == 9 and higher.processes_refused == 3


class _Group:
    """A command group as the pool sees it: reusable, its peaks reset."""

    reusable = True

    def __init__(self) -> None:
        self.resets = 0

    def reset_peaks(self) -> None:
        self.resets += 1


KEY = ("s", 10, 64 * MIB)


def test_the_pool_keeps_only_what_is_exact_to_reuse():
    pool = GroupPool(size=3)
    # A process still counted (a zombie too), too much still charged (1/64 of the 64
    # MiB limit is allowed), or no reading.
    assert charge_allowed(64 * MIB) == MIB and charge_allowed(None) == POOL_CHARGE_LEFT
    assert not pool.keep(_Group(), _reading(processes_now=1), KEY, 64 * MIB)
    assert not pool.keep(_Group(), _reading(memory_now=MIB + 1), KEY, 64 * MIB)
    assert not pool.keep(_Group(), None, KEY, 64 * MIB)
    kept = _Group()
    assert pool.keep(kept, _reading(), KEY, 64 * MIB)
    assert kept.resets == 1  # its memory peak starts again
    assert pool.take(("other", 10, 64 * MIB)) is None  # another session's, or other limits
    assert pool.take(KEY) == (kept, _reading())
    assert pool.take(KEY) is None
    # At most `size` kept; a closed session's are forgotten.
    for _ in range(3):
        assert pool.keep(_Group(), _reading(), KEY, 64 * MIB)
    assert not pool.keep(_Group(), _reading(), KEY, 64 * MIB)
    pool.drop("s")
    assert pool.take(KEY) is None
    assert pool.keep(_Group(), _reading(), KEY, 64 * MIB)


@pytest.fixture(autouse=True)
def _cgroups_here(request):
    if "tmp_path" not in request.fixturenames:
        return
    host = detect()
    if host.version != "v1" or not {"pids", "memory"} <= host.controllers:
        message = f"no writable v1 pids and memory cgroups here: {host.reason}"
        if IN_CI:
            pytest.fail(f"CI=true and cgroups are missing: {message}")
        pytest.skip(message)


def _policy(tmp_path, mode=SandboxMode.WORKSPACE_WRITE):
    return ExecutionPolicy(mode=mode, workspace_root=str(tmp_path))


def _config(**limits) -> ExecutorConfig:
    return ExecutorConfig(
        limits=Limits(**limits), session_limits=SessionLimits(memory=None), kill_grace=0.2
    )


def _own_cgroups() -> str:
    with open("/proc/self/cgroup") as lines:
        return lines.read()


def _memory_dir(cgroup_line: str) -> str:
    """The host's directory of the memory cgroup a command's /proc/self/cgroup names."""
    path = cgroup_line.strip().split(":", 2)[2]
    base = next(h for h in detect().hierarchies if "memory" in h.controllers)
    below = path[len(base.path.rstrip("/")) :].lstrip("/")
    return os.path.join(base.directory, below)


async def test_a_sessions_next_call_reuses_its_empty_group(tmp_path):
    policy = _policy(tmp_path)
    async with executor_on("landlock", _config()) as executor:
        first = await executor.run(executor.resolve(WHERE, policy=policy, owner="a"))
        second = await executor.run(executor.resolve(WHERE, policy=policy, owner="a"))
        other = await executor.run(executor.resolve(WHERE, policy=policy, owner="b"))
        assert first.exit_code == second.exit_code == other.exit_code == 0, first
        assert "/c-" in first.stdout and first.stdout == second.stdout
        assert other.stdout != first.stdout  # never another session's group
        kept = _memory_dir(first.stdout)
        assert os.path.isdir(kept)  # empty, waiting for the session's next call
        await executor.close_session("a")
        assert not os.path.exists(kept)  # removed with its session
    assert not os.path.exists(_memory_dir(other.stdout))


async def test_a_reused_group_reports_only_its_own_calls_use(tmp_path):
    """Call one burns CPU, allocates 64 MiB and has forks refused, then exits 0; call
    two, in the same group, used none of that and its end blames no limit."""
    policy = _policy(tmp_path)
    # Forks in python, which survives the refusal (bash gives up with 254).
    script = (
        "import os, signal, time\n"
        "b = bytearray(64 << 20)\n"
        "t = time.process_time()\n"
        "while time.process_time() - t < 0.3: pass\n"
        "made = []\n"
        "try:\n"
        "    while len(made) < 20:\n"
        "        pid = os.fork()\n"
        "        if pid == 0:\n"
        "            time.sleep(5); os._exit(0)\n"
        "        made.append(pid)\n"
        "except OSError: pass\n"
        "for pid in made: os.kill(pid, signal.SIGKILL); os.waitpid(pid, 0)\n"
    )
    busy = f"python3 -c '{script}'; {WHERE}; exit 0"
    async with executor_on("landlock", _config(processes=8)) as executor:
        first = await executor.run(executor.resolve(busy, policy=policy, owner="a"))
        second = await executor.run(executor.resolve(f"{WHERE}; exit 3", policy=policy, owner="a"))
    assert first.exit_code == 0, first
    assert first.stdout.splitlines()[-1] == second.stdout.strip()  # the same group
    assert first.usage.cpu_seconds >= 0.3 and first.usage.memory_peak >= 64 * MIB
    assert first.note is not None and "processes limit of 8" in first.note  # refused forks
    assert second.usage.cpu_seconds < 0.2, second.usage
    assert second.usage.memory_peak < 32 * MIB, second.usage
    assert (second.cause, second.limit, second.note) == ("exited", None, None), second


async def test_a_group_still_charged_with_much_is_not_reused(tmp_path):
    """What a command leaves charged (here, 32 MiB of page cache it wrote) would count
    against the next command's memory limit: that group is removed, not reused."""
    policy = _policy(tmp_path)
    write = f"head -c {32 * MIB} /dev/zero > big; {WHERE}"
    async with executor_on("landlock", _config()) as executor:
        first = await executor.run(executor.resolve(write, policy=policy, owner="a"))
        left = _memory_dir(first.stdout)
        second = await executor.run(executor.resolve(WHERE, policy=policy, owner="a"))
        assert first.exit_code == second.exit_code == 0, first
        assert second.stdout != first.stdout
        assert not os.path.exists(left)


@pytest.mark.parametrize("backend", [None, "bwrap"])
async def test_groups_that_could_hold_a_leftover_are_never_reused(tmp_path, backend):
    """Unconfined, a root command can move its processes elsewhere (its claims are
    partial); under bwrap, its namespace init is reaped by whoever inherits it (here the
    container's pid 1, in its own time) and holds a place in pids.current until then.
    Their groups are removed after the call, never handed to the next."""
    mode = SandboxMode.DANGER_FULL_ACCESS if backend is None else SandboxMode.WORKSPACE_WRITE
    policy = _policy(tmp_path, mode)
    async with executor_on(backend, _config()) as executor:
        first = await executor.run(executor.resolve(WHERE, policy=policy, owner="a"))
        second = await executor.run(executor.resolve(WHERE, policy=policy, owner="a"))
        assert first.exit_code == second.exit_code == 0, first
        assert first.stdout != second.stdout
        assert not os.path.exists(_memory_dir(first.stdout))


async def test_no_memory_cgroup_is_made_when_no_memory_limit_needs_one(tmp_path):
    """memory null for the command and its session: the command stays in the harness's
    own memory cgroup (nothing per call to account apart), and its processes and CPU
    are still held and counted in its group."""
    config = ExecutorConfig(
        limits=Limits(memory=None), session_limits=SessionLimits(memory=None), kill_grace=0.2
    )
    own = next(line for line in _own_cgroups().splitlines() if ":memory:" in line)
    command = f"{WHERE}; grep -E ':pids:' /proc/self/cgroup"
    async with executor_on("landlock", config) as executor:
        result = await executor.run(executor.resolve(command, policy=_policy(tmp_path)))
    assert result.exit_code == 0, result
    memory, pids = result.stdout.splitlines()
    assert memory == own
    assert "/c-" in pids
    assert result.usage.memory_peak is None and result.usage.cpu_seconds is not None
    claims = {claim.name: claim for claim in result.limits}
    assert claims["memory"].claim == "unlimited" and claims["processes"].claim == "enforced"
