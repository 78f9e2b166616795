"""Real kernel: stockade's cgroups are detected, made, limited, read, killed and removed.

Every group lives in a subtree a test made below this process's own cgroup and is
removed (leaves first) in teardown; every hog and fork loop runs with its limit already
in force and a timeout.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import msgspec
import pytest

from stockade.limits.cgroups import (
    CPU,
    MEMORY,
    PIDS,
    CgroupError,
    CgroupHost,
    CgroupTree,
    Group,
    Hierarchy,
    detect,
    pid_namespace,
    safe_name,
    sweep,
)

from ..support import IN_CI, IS_ROOT

MiB = 1 << 20


@pytest.fixture(scope="module")
def host() -> CgroupHost:
    found = detect()
    if found.version is None:
        message = f"no usable cgroups here: {found.reason}"
        if IN_CI:
            pytest.fail(f"CI=true and cgroups are missing: {message}")
        pytest.skip(message)
    return found


@pytest.fixture
def tree(host: CgroupHost) -> Iterator[CgroupTree]:
    made = CgroupTree.open(host, name_prefix="stockade-test")
    try:
        yield made
    finally:
        made.close()
    assert not any(os.path.exists(d) for d in made.root.directories)


def start_in(
    group: Group, argv: list[str], output: int = subprocess.PIPE
) -> subprocess.Popen[bytes]:
    """Start `argv` already in `group`: the child writes "0" (itself) into each of the
    group's cgroup.procs before exec, as the launcher does."""
    fds = [os.open(path, os.O_WRONLY | os.O_CLOEXEC) for path in group.procs_files()]
    try:
        return subprocess.Popen(
            argv,
            pass_fds=fds,
            preexec_fn=lambda: [os.write(fd, b"0") for fd in fds],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
        )
    finally:
        for fd in fds:
            os.close(fd)


def wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def text(path: str) -> str:
    with open(path) as file:
        return file.read()


def read(directory: str, name: str) -> str:
    return text(os.path.join(directory, name)).strip()


def by_controller(group: Group, controller: str) -> str:
    for hierarchy, directory in zip(group.host.hierarchies, group.directories, strict=True):
        if controller in hierarchy.controllers:
            return directory
    raise AssertionError(f"no {controller} hierarchy")


def test_this_machine_gives_v1_with_pids_memory_and_cpu(host):
    # The hybrid layout of this machine and CI: cgroup2 holds neither controller.
    assert host.version == "v1", host.reason
    assert host.controllers == {PIDS, MEMORY, CPU}
    own = dict(line.split(":", 2)[1:] for line in text("/proc/self/cgroup").splitlines())
    assert host.bases[MEMORY].endswith(own["memory"].rstrip("/"))
    assert host.bases[PIDS].startswith("/sys/fs/cgroup/")
    assert host.swap == (len(text("/proc/swaps").splitlines()) > 1)
    assert "unified" in host.reason  # it says why v2 was passed over


def test_detection_leaves_nothing_behind(host):
    before = {d: set(os.listdir(d)) for d in host.bases.values()}
    detect()
    assert {d: set(os.listdir(d)) for d in host.bases.values()} == before


def test_session_and_command_groups_get_their_limits(tree):
    session = tree.session("sess/1", processes=40, memory=256 * MiB)
    command = session.command("call.7", processes=8, memory=64 * MiB)
    assert command.relative.startswith(session.relative + "/")
    assert all(
        part.replace("-", "").replace("_", "").isalnum() for part in command.relative.split("/")
    )
    for group, processes, memory in ((session, 40, 256 * MiB), (command, 8, 64 * MiB)):
        assert read(by_controller(group, PIDS), "pids.max") == str(processes)
        assert read(by_controller(group, MEMORY), "memory.limit_in_bytes") == str(memory)
    assert command.procs_files() == [os.path.join(d, "cgroup.procs") for d in command.directories]
    with pytest.raises(CgroupError, match="below a session"):
        command.command("deeper")


def test_unsafe_ids_make_distinct_safe_names():
    assert safe_name("call_1-a") == "call_1-a"
    names = {safe_name(x) for x in ("a/b", "a.b", "a b", "../..", "", "a" * 300)}
    assert len(names) == 6
    assert all(
        n
        and len(n) <= 73
        and not set(n) - set("abcdefghijklmnopqrstuvwxyz0123456789_-ABCDEFGHIJKLMNOPQRSTUVWXYZ")
        for n in names
    )


def test_a_reused_command_id_is_a_clear_error(tree):
    session = tree.session("s")
    session.command("once")
    with pytest.raises(CgroupError, match=r"cannot make the command cgroup .*c-once"):
        session.command("once")


def removed_once_empty(group: Group, timeout: float = 10.0) -> bool:
    """The group is removed, nothing killed: rmdir alone, retried. A group whose last
    process has just been reaped can refuse it for a moment (EBUSY: the kernel unlinks
    an exited task from its cgroup after the exit its parent waited for; it failed once
    in CI under load), so only a group still busy after `timeout` has something live."""
    deadline = time.monotonic() + timeout
    while not group.try_remove():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _launcher() -> str:
    from stockade.sandbox._probe import launcher_path

    return launcher_path()


def test_a_group_for_the_launcher_is_made_limited_and_joined_by_it(tree):
    """What a call uses: the harness only names the group; the shipped launcher makes,
    limits and joins it, so the command is in it and held by its limits."""
    session = tree.session("s")
    command, options = session.command_for_launcher("made", processes=6, memory=64 << 20)
    assert not any(os.path.exists(d) for d in command.directories)  # nothing made yet
    script = "cat /proc/self/cgroup; for i in 1 2 3 4 5 6 7 8; do sleep 5 & done; wait"
    launched = subprocess.run(
        [_launcher(), "--limits-only", *options, "--", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
    )
    for hierarchy in tree.host.hierarchies:
        wanted = f":{hierarchy.key}:{hierarchy.path.rstrip('/')}/{command.relative}\n"
        assert wanted in launched.stdout, launched
    used = command.usage()
    assert used.processes_refused > 0 and used.processes_peak == 6
    limit_file = "memory.max" if tree.host.version == "v2" else "memory.limit_in_bytes"
    assert read(by_controller(command, MEMORY), limit_file) == str(64 << 20)
    # While it stands, a launch with the same options is refused: never a shared group.
    again = subprocess.run(
        [_launcher(), "--limits-only", *options, "--", "true"], capture_output=True, text=True
    )
    assert again.returncode == 125 and "exists already" in again.stderr, again
    assert removed_once_empty(command)
    assert not any(os.path.exists(d) for d in command.directories)


def test_a_group_for_the_launcher_can_leave_out_a_hierarchy(tree):
    command, options = tree.session("s").command_for_launcher("lean", without=frozenset({MEMORY}))
    assert [h.controllers for h in command.hierarchies] == [
        h.controllers for h in tree.host.hierarchies if h.controllers - {MEMORY}
    ]
    assert len(command.directories) == len(command.hierarchies)
    assert not any("memory" in option for option in options)
    launched = subprocess.run(
        [_launcher(), "--limits-only", *options, "--", "cat", "/proc/self/cgroup"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert launched.returncode == 0, launched
    own = text("/proc/self/cgroup")
    memory = next(line for line in launched.stdout.splitlines() if ":memory:" in line)
    assert memory + "\n" in own  # still the harness's own memory cgroup
    used = command.usage()
    assert used.memory_peak is None and used.cpu_seconds is not None
    assert removed_once_empty(command)


def test_a_process_in_a_command_group_is_counted_killed_and_removed(tree):
    command = tree.session("s").command("sleep")
    child = start_in(command, ["sleep", "30"])
    try:
        lines = text(f"/proc/{child.pid}/cgroup")
        for hierarchy in tree.host.hierarchies:
            assert f":{hierarchy.key}:{hierarchy.path.rstrip('/')}/{command.relative}\n" in lines
        assert command.usage().processes_now == 1
        assert command.kill() is True
        assert child.wait(timeout=10) == -9
        used = command.usage()
        assert used.processes_now == 0 and used.processes_peak == 1
        assert used.cpu_seconds is not None and used.memory_peak is not None
    finally:
        child.kill()
        child.wait(timeout=10)
    command.remove()
    assert not any(os.path.exists(d) for d in command.directories)
    command.remove()  # idempotent


def test_a_group_that_serves_one_call_reads_only_what_its_result_reports(tree):
    command = tree.session("s").command("once", processes=8, memory=64 * MiB)
    child = start_in(command, ["sleep", "30"])
    try:
        full, once = command.usage(), command.usage(reuse=False)
    finally:
        child.kill()
        child.wait(timeout=10)
    # What only the pool's reuse decision needs is not read...
    assert (full.processes_now, once.processes_now) == (1, None)
    assert full.memory_now is not None and once.memory_now is None
    # ...and every fact a result reports still is.
    assert once.processes_peak == full.processes_peak == 1
    assert once.memory_peak is not None and once.cpu_seconds is not None
    assert (once.processes_refused, once.oom_kills) == (0, 0)


def test_remove_kills_what_is_left(tree):
    command = tree.session("s").command("left")
    child = start_in(command, ["sleep", "30"])
    try:
        command.remove()
        assert child.wait(timeout=10) == -9
    finally:
        child.kill()
        child.wait(timeout=10)
    assert not any(os.path.exists(d) for d in command.directories)


def _pinned_names(pinned: list[int], pid: int) -> bool:
    """Whether one of `pinned` (pidfds) names `pid`: reaped through it, ended by SIGKILL."""
    try:
        for pidfd in pinned:
            ended = os.waitid(os.P_PIDFD, pidfd, os.WEXITED)
            if ended is not None and ended.si_pid == pid:
                return ended.si_status == signal.SIGKILL
        return False
    finally:
        for pidfd in pinned:
            os.close(pidfd)


def test_remove_can_pin_what_it_kills(tree):
    # A harness that is pid 1 reaps what its calls' cgroups held (executor/_orphans.py):
    # through pidfds taken while each was alive in the group, so only those.
    command = tree.session("s").command("pinned")
    child = start_in(command, ["sleep", "30"])
    pinned: list[int] = []
    try:
        command.remove(pinned=pinned)
        assert _pinned_names(pinned, child.pid)
    finally:
        child.kill()
        child.wait(timeout=10)
    assert not any(os.path.exists(d) for d in command.directories)


def test_pids_max_refuses_the_sixth_process(tree):
    command = tree.session("s", processes=50).command("forks", processes=5)
    script = "for i in 1 2 3 4 5 6 7 8; do sleep 30 & done; echo started"
    # No pipes: the background sleeps would hold them open.
    child = start_in(command, ["sh", "-c", script], output=subprocess.DEVNULL)
    try:
        child.wait(timeout=20)  # sh ends (or gives up) once forks fail
        used = command.usage()
        assert used.processes_refused > 0
        assert used.processes_peak == 5
        assert used.processes_now is not None and used.processes_now <= 5
    finally:
        assert command.kill() is True
        child.kill()
        child.wait(timeout=10)
    assert not "".join(text(f) for f in command.procs_files())


def test_a_memory_limit_oom_kills_an_allocation_past_it(tree):
    command = tree.session("s").command("hog", processes=4, memory=32 * MiB)
    # Writes every byte (b"x" * n memsets), so all 64 MiB is charged.
    hog = "data = b'x' * (64 << 20); print(len(data))"
    child = start_in(command, [sys.executable, "-c", hog])
    try:
        out, _ = child.communicate(timeout=30)
    finally:
        child.kill()
        child.wait(timeout=10)
    assert child.returncode == -9 and out == b""
    used = command.usage()
    assert used.oom_kills >= 1
    assert used.memory_peak is not None and used.memory_peak <= 32 * MiB


def test_kill_empties_a_group_running_a_fork_loop(tree):
    command = tree.session("s").command("loop", processes=20, memory=256 * MiB)
    loop = (
        "import os, time\n"
        "while True:\n"
        "    try:\n"
        "        os.fork()\n"
        "    except OSError:\n"
        "        time.sleep(0.001)\n"
    )
    child = start_in(command, [sys.executable, "-c", loop])
    try:
        for _ in range(500):  # until the loop fills its limit (at most 5 s)
            if (command.usage().processes_now or 0) >= 20:
                break
            time.sleep(0.01)
        assert command.usage().processes_refused > 0
        assert command.kill() is True
        # cgroup.procs lists none; pids.current still counts the zombies until reaped
        assert not "".join(text(f) for f in command.procs_files())
        child.wait(timeout=10)
        wait_for(lambda: command.usage().processes_now == 0)
    finally:
        command.kill()
        child.kill()
        child.wait(timeout=10)


@pytest.fixture
def nested(host: CgroupHost) -> Iterator[CgroupHost]:
    """A host whose own cgroups are a subtree this test made: sweep() looks there only,
    never at the real harnesses sharing our cgroup."""
    made = CgroupTree.open(host, name_prefix="stockade-sweeptest")
    hierarchies = tuple(
        msgspec.structs.replace(h, path=f"{h.path.rstrip('/')}/{made.root.relative}", directory=d)
        for h, d in zip(host.hierarchies, made.root.directories, strict=True)
    )
    try:
        yield msgspec.structs.replace(host, hierarchies=hierarchies)
    finally:
        made.close()


def test_sweep_removes_a_dead_harnesses_subtree_and_nothing_else(nested):
    dead = 99_999_999  # above any pid_max: no such process
    assert not os.path.exists(f"/proc/{dead}")
    here = pid_namespace()
    names = {
        "dead": f"stockade-p{here}-{dead}-00c0ffee",
        "dead_busy": f"stockade-p{here}-{dead}-0000beef",
        "other": f"other-p{here}-{dead}-00c0ffee",
        # A harness in another PID namespace sharing this cgroup: its pid runs nowhere
        # here, and it may be alive all the same.
        "elsewhere": f"stockade-p{here + 1}-{dead}-00c0ffee",
        # Named before the namespace was: nothing says whose it is.
        "unnamed": f"stockade-{dead}-00c0ffee",
    }
    for hierarchy in nested.hierarchies:
        for name in names.values():
            os.makedirs(os.path.join(hierarchy.directory, name, "s-x", "c-y"))
    live = CgroupTree.open(nested)
    busy = Group(
        nested,
        "command",
        f"{names['dead_busy']}/s-x/c-y",
        tuple(
            os.path.join(h.directory, names["dead_busy"], "s-x", "c-y") for h in nested.hierarchies
        ),
    )
    child = start_in(busy, ["sleep", "30"])
    try:
        removed = sweep(nested)
        assert sorted(removed) == sorted(
            os.path.join(h.directory, names["dead"]) for h in nested.hierarchies
        )
        for hierarchy in nested.hierarchies:
            assert sorted(
                os.path.basename(p) for p in os.scandir(hierarchy.directory) if p.is_dir()
            ) == sorted(
                [
                    names["dead_busy"],
                    names["other"],
                    names["elsewhere"],
                    names["unnamed"],
                    live.root.relative,
                ]
            )
    finally:
        busy.kill()
        child.wait(timeout=10)
        live.close()
    # the nested fixture's close() removes the rest, the unrelated name included


def test_cgroups_made_unreachable_give_no_version_and_a_reason(tmp_path):
    nothing = detect(cgroup_root=str(tmp_path))
    assert nothing.version is None and nothing.controllers == frozenset()
    assert "no cgroup2 mount" in nothing.reason


@pytest.mark.skipif(not IS_ROOT or shutil.which("unshare") is None, reason="needs root and unshare")
def test_read_only_cgroups_give_no_version_and_say_why():
    # In a private mount namespace every cgroup mount is made read-only: mkdir fails.
    script = (
        "for m in $(awk '$9 ~ /^cgroup/ {print $5}' /proc/self/mountinfo); do "
        'mount -o remount,bind,ro "$m" || exit 3; done; '
        f"exec {sys.executable} -c 'from stockade.limits.cgroups import detect; "
        "h = detect(); print(h.version); print(h.reason)'"
    )
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    version, reason = done.stdout.splitlines()
    assert version == "None"
    assert "Read-only file system" in reason


def test_v2_groups_are_made_joined_killed_and_removed_on_the_unified_hierarchy():
    # This machine's cgroup2 has no pids or memory controller, so detect() passes it over;
    # its groups still exercise v2's own parts (cgroup.kill, cpu.stat, the "0::" line).
    path = next(
        line.split(":", 2)[2]
        for line in text("/proc/self/cgroup").splitlines()
        if line.startswith("0::")
    )
    directory = "/sys/fs/cgroup/unified" + path.rstrip("/")
    if not os.path.exists(os.path.join(directory, "cgroup.procs")):
        if IN_CI:
            pytest.fail("CI=true and no cgroup2 is mounted at /sys/fs/cgroup/unified")
        pytest.skip("no cgroup2 mounted at /sys/fs/cgroup/unified")
    cpu_only = Hierarchy(frozenset({CPU}), "", path, directory)
    v2 = CgroupHost("v2", frozenset({CPU}), (cpu_only,), False, False, "made for this test")
    with CgroupTree.open(v2, name_prefix="stockade-test") as made:
        command = made.session("s").command("sleep")
        child = start_in(command, ["sleep", "30"])
        try:
            expected = f"0::{path.rstrip('/')}/{command.relative}\n"
            assert text(f"/proc/{child.pid}/cgroup").endswith(expected)
            assert os.path.exists(os.path.join(command.directories[0], "cgroup.kill"))
            assert command.kill() is True
            assert child.wait(timeout=10) == -9
            used = command.usage()
            assert used.cpu_seconds is not None and used.processes_now is None
        finally:
            child.kill()
            child.wait(timeout=10)
        # cgroup.kill ends every member at once: those there before it are pinned first.
        again = start_in(command, ["sleep", "30"])
        pinned: list[int] = []
        try:
            assert command.kill(pinned=pinned) is True
            assert _pinned_names(pinned, again.pid)
        finally:
            again.kill()
            again.wait(timeout=10)
        command.remove()
        assert not os.path.exists(command.directories[0])
    assert not os.path.exists(made.root.directories[0])
