# ruff: noqa: F811 (the `launcher` fixture comes from test_launcher.py)
"""Per-command limits (issue 26): `--cgroup-fd N` puts the launcher, and so everything
it starts, in the cgroup whose cgroup.procs the caller opened (`--cgroup-procs PATH`:
the launcher opens it; `--cgroup-make DIR` and `--cgroup-set PATH=VALUE`: it makes and
limits the group first); `--rlimit NAME=VALUE`
sets the command's rlimits just before exec. In Landlock mode, in bwrap's filter stage
(`--filters-only`) and alone (`--limits-only`).

Judged from the host on a real kernel: a throwaway v1 pids cgroup below this process's
own (its pids.current and pids.events), the command's /proc/self/{cgroup,fd,limits},
and what the limits do to a fork loop, a big write, many opens and a busy loop.
Built from source by the `launcher` fixture of test_launcher.py (cc and musl-gcc).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .test_launcher import (
    IS_ROOT,
    LAUNCHER_FAILURE,
    NOBODY,
    assert_launcher_failure,
    launcher,  # noqa: F401
    public_dir,  # noqa: F401
)

pytestmark = [pytest.mark.kernel, pytest.mark.nobody]

IN_CI = os.environ.get("CI") == "true"
PIDS_HIERARCHY = Path("/sys/fs/cgroup/pids")
PIDS_MAX = 20
# A descriptor number no test process holds by chance: the command's own `ls` of
# /proc/self/fd then cannot list it under another name.
CGROUP_FD_FLOOR = 50
TIMEOUT = 20
PYTHON = [sys.executable, "-I", "-S", "-B"]
LANDLOCK = ["--ro", "/", "--rw", "/dev/null"]
BWRAP = "/usr/bin/bwrap"
BWRAP_ARGS = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid"]


def need(condition: bool, reason: str) -> None:
    """Skip locally, fail in CI: every real-kernel test must run there."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"CI=true and {reason}")
    pytest.skip(reason)


def own_pids_cgroup() -> Path | None:
    """This process's cgroup in the v1 pids hierarchy (line `N:pids:/path`)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "pids" in controllers.split(","):
            return PIDS_HIERARCHY / path.lstrip("/")
    return None


def remove_cgroup(group: Path) -> None:
    """rmdir once empty. Only the test's own processes can be in it (they were moved
    there by the launcher it started); any left after a while are killed."""
    deadline = time.monotonic() + 10
    while True:
        left = [int(p) for p in (group / "cgroup.procs").read_text().split()]
        if not left:
            break
        if time.monotonic() > deadline:
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
    for _ in range(100):
        try:
            group.rmdir()
            return
        except OSError:  # EBUSY while the last exit is accounted
            time.sleep(0.05)
    group.rmdir()


class Cgroup:
    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self.fd = fd  # open for writing on its cgroup.procs, inheritable only via pass_fds

    @property
    def name(self) -> str:
        """The path /proc/PID/cgroup gives for it."""
        return "/" + str(self.path.relative_to(PIDS_HIERARCHY))

    def events_max(self) -> int:
        return int((self.path / "pids.events").read_text().split()[1])


@pytest.fixture
def cgroup() -> Iterator[Cgroup]:
    """A v1 pids cgroup (pids.max = PIDS_MAX) of the test's own, and a descriptor on its
    cgroup.procs as the harness would pass it."""
    parent = own_pids_cgroup()
    need(IS_ROOT, "making a cgroup needs a root caller")
    need(parent is not None and parent.is_dir(), "there is no v1 pids hierarchy here")
    assert parent is not None
    path = parent / f"stockade-test-{secrets.token_hex(4)}"
    path.mkdir()
    fd = -1
    try:
        (path / "pids.max").write_text(f"{PIDS_MAX}\n")
        opened = os.open(path / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)
        fd = fcntl.fcntl(opened, fcntl.F_DUPFD_CLOEXEC, CGROUP_FD_FLOOR)
        os.close(opened)
        yield Cgroup(path, fd)
    finally:
        if fd >= 0:
            os.close(fd)
        remove_cgroup(path)


@pytest.fixture(params=["landlock", "bwrap", "limits-only"])
def mode(request) -> str:
    if request.param == "bwrap":
        need(os.access(BWRAP, os.X_OK), f"{BWRAP} is missing")
    return request.param


def argv(launcher, mode: str, options, command, writable=()) -> list[str]:
    """The launcher's command line in `mode`, bwrap's around it for its filter stage
    (`writable`: what Landlock mode or bwrap lets the command write, besides /dev)."""
    options = [str(o) for o in options]
    command = [str(c) for c in command]
    if mode == "landlock":
        grants = [str(a) for path in writable for a in ("--rw", path)]
        return [str(launcher), *LANDLOCK, *grants, *options, "--", *command]
    if mode == "limits-only":
        return [str(launcher), "--limits-only", *options, "--", *command]
    if mode == "filters-only":  # the filter stage without its runner
        return [str(launcher), "--filters-only", *options, "--", *command]
    assert mode == "bwrap"
    filter_stage = [str(launcher), "--filters-only", *options, "--", *command]
    binds = [str(a) for path in writable for a in ("--bind", path, path)]
    return [BWRAP, *BWRAP_ARGS, *binds, "--die-with-parent", "--", *filter_stage]


def run(command, fds=(), **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, capture_output=True, text=True, timeout=TIMEOUT, pass_fds=fds, **kwargs
    )


def pids_line(text: str) -> str:
    return next(line.split(":", 2)[2] for line in text.splitlines() if ":pids:" in line)


# ---- --cgroup-fd ----

# What the command says: its pids cgroup, its descriptors, and how many processes
# the cgroup counts (read by the command, so while the launcher's processes live).
REPORT = (
    'grep :pids: /proc/self/cgroup; ls /proc/self/fd | tr "\\n" " "; echo; '
    "cat {}/pids.current; exit 0"
)
# The launcher's processes in the cgroup as the command runs: Landlock mode's monitor,
# init and the command (sh; cat a fourth); under bwrap or alone, the command only
# (bwrap's own processes were started before the launcher joined).
COUNTED = {"landlock": 4, "bwrap": 2, "limits-only": 2}


def test_the_command_runs_in_the_cgroup_without_its_descriptor(launcher, cgroup, mode):
    command = ["sh", "-c", REPORT.format(cgroup.path)]
    result = run(argv(launcher, mode, ["--cgroup-fd", cgroup.fd], command), fds=[cgroup.fd])
    assert result.returncode == 0, result
    assert result.stderr == ""
    group, fds, counted = result.stdout.splitlines()
    assert pids_line(group) == cgroup.name
    assert str(cgroup.fd) not in fds.split()
    assert {"0", "1", "2"} <= set(fds.split())
    assert int(counted) == COUNTED[mode]


def test_the_monitor_is_in_the_cgroup_before_anything_starts(launcher, cgroup):
    """Judged from the host: the launcher's own pid (the monitor, in the caller's pid
    namespace) is in the cgroup while the command runs."""
    command = ["sh", "-c", "read line"]
    proc = subprocess.Popen(
        argv(launcher, "landlock", ["--cgroup-fd", cgroup.fd], command),
        pass_fds=[cgroup.fd],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 10
        while int((cgroup.path / "pids.current").read_text()) < 3:
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.02)
        members = (cgroup.path / "cgroup.procs").read_text().split()
        assert str(proc.pid) in members
        assert pids_line(Path(f"/proc/{proc.pid}/cgroup").read_text()) == cgroup.name
        assert str(cgroup.fd) not in os.listdir(f"/proc/{proc.pid}/fd")
    finally:
        _, err = proc.communicate("\n", timeout=TIMEOUT)
    assert proc.returncode == 0, err


def test_the_cgroup_refuses_the_process_past_pids_max(launcher, cgroup):
    """pids.max = 20 counts the launcher's monitor and init, the shell and its sleeps:
    the fork past 20 fails. The sleeps end with the call's PID namespace."""
    loop = "n=0; while [ $n -lt 40 ]; do sleep 30 & n=$((n + 1)); echo $n; done"
    command = ["sh", "-c", loop]
    result = run(argv(launcher, "landlock", ["--cgroup-fd", cgroup.fd], command), fds=[cgroup.fd])
    started = int(result.stdout.split()[-1]) if result.stdout.strip() else 0
    assert result.returncode != 0, result
    assert "fork" in result.stderr.lower(), result.stderr
    # Monitor, init and shell (3) and each sleep started: never more than pids.max.
    assert started == PIDS_MAX - 3
    assert cgroup.events_max() >= 1


def test_the_cgroup_works_for_a_caller_that_could_not_open_it(launcher, cgroup, public_dir):
    """The write is judged by the opener's credentials: a root-opened descriptor lets a
    nobody launcher join a cgroup whose cgroup.procs nobody could not open."""
    nobody_launcher = public_dir / "landlock-run"
    shutil.copy2(launcher, nobody_launcher)
    command = [
        "sh",
        "-c",
        f"id -u; grep :pids: /proc/self/cgroup; echo 0 > {cgroup.path}/cgroup.procs",
    ]
    for mode in ("landlock", "limits-only"):
        result = run(
            argv(nobody_launcher, mode, ["--cgroup-fd", cgroup.fd], command),
            fds=[cgroup.fd],
            user=NOBODY,
            group=NOBODY,
            extra_groups=[],
            cwd="/",
        )
        # Joined through the descriptor; refused opening cgroup.procs itself.
        uid, group = result.stdout.splitlines()
        assert (uid, pids_line(group)) == (str(NOBODY), cgroup.name), result
        assert result.returncode != 0 and "Permission denied" in result.stderr, result


# ---- --rlimit ----

LIMITS = {
    # option value, /proc/self/limits row, (soft, hard) shown there
    "nproc": ("77", "Max processes", ("77", "77")),
    "as": (str(4 << 30), "Max address space", (str(4 << 30), str(4 << 30))),
    "data": (str(3 << 30), "Max data size", (str(3 << 30), str(3 << 30))),
    "cpu": ("30", "Max cpu time", ("30", "35")),
    "fsize": (str(1 << 20), "Max file size", (str(1 << 20), str(1 << 20))),
    "nofile": ("64", "Max open files", ("64", "64")),
}


def limits_table(text: str) -> dict[str, tuple[str, str]]:
    """/proc/self/limits: row name -> (soft, hard)."""
    rows = {}
    for line in text.splitlines()[1:]:
        name, soft, hard = line[:26].strip(), line[26:47].strip(), line[47:68].strip()
        rows[name] = (soft, hard)
    return rows


def test_each_rlimit_shows_in_the_commands_limits(launcher, mode):
    options = [o for name, (value, _, _) in LIMITS.items() for o in ("--rlimit", f"{name}={value}")]
    result = run(argv(launcher, mode, options, ["cat", "/proc/self/limits"]))
    assert result.returncode == 0, result
    table = limits_table(result.stdout)
    for name, (_, row, shown) in LIMITS.items():
        assert table[row] == shown, name


def test_unlimited_is_no_limit(launcher, mode):
    result = run(argv(launcher, mode, ["--rlimit", "as=unlimited"], ["cat", "/proc/self/limits"]))
    assert result.returncode == 0, result
    assert limits_table(result.stdout)["Max address space"] == ("unlimited", "unlimited")


def test_the_launcher_itself_keeps_its_limits(launcher):
    """Only the command gets the rlimits: the call's init (pid 1 of its namespace, the
    command's parent) keeps the caller's."""
    caller = limits_table(Path("/proc/self/limits").read_text())["Max open files"]
    command = ["sh", "-c", "cat /proc/1/limits; echo ---; cat /proc/self/limits"]
    result = run(argv(launcher, "landlock", ["--rlimit", "nofile=32"], command))
    assert result.returncode == 0, result
    init_limits, own = result.stdout.split("---\n")
    assert limits_table(init_limits)["Max open files"] == caller
    assert limits_table(own)["Max open files"] == ("32", "32")


WRITE_BIG = "head -c 100000 /dev/zero > {}"


def test_fsize_stops_a_big_write(launcher, mode, tmp_path):
    """A shell's write past it dies of SIGXFSZ; Python (which ignores it) gets EFBIG."""
    target = tmp_path / "big"
    limit = ["--rlimit", "fsize=4096"]
    shell = ["sh", "-c", WRITE_BIG.format(target)]
    result = run(argv(launcher, mode, limit, shell, writable=[tmp_path]))
    assert result.returncode in (-signal.SIGXFSZ, 128 + signal.SIGXFSZ), result
    assert target.stat().st_size == 4096
    write = f"open({str(target)!r}, 'wb').write(bytes(100000))"
    code = f"import errno\ntry:\n    {write}\nexcept OSError as e:\n    print(errno.errorcode[e.errno])"
    result = run(argv(launcher, mode, limit, [*PYTHON, "-c", code], writable=[tmp_path]))
    assert (result.returncode, result.stdout) == (0, "EFBIG\n"), result


OPEN_MANY = """
import errno, os
fds = []
try:
    while len(fds) < 200:
        fds.append(os.open("/dev/null", os.O_RDONLY))
except OSError as e:
    print(errno.errorcode[e.errno], max(fds))
"""


def test_nofile_refuses_opening_more(launcher, mode):
    result = run(argv(launcher, mode, ["--rlimit", "nofile=24"], [*PYTHON, "-c", OPEN_MANY]))
    assert result.returncode == 0, result
    err, highest = result.stdout.split()
    assert (err, int(highest)) == ("EMFILE", 23)


def test_cpu_ends_a_busy_loop_with_sigxcpu(launcher, mode):
    started = time.monotonic()
    result = run(argv(launcher, mode, ["--rlimit", "cpu=1"], ["sh", "-c", "while :; do :; done"]))
    # bwrap reports its command's death by a signal as 128 + the signal.
    assert result.returncode in (-signal.SIGXCPU, 128 + signal.SIGXCPU), result
    assert time.monotonic() - started < 10


# ---- failures: exit 125, one line, no command run ----

FAILURES = {
    "closed_fd": (["--cgroup-fd", "63"], "cannot join the command's cgroup (fd 63): Bad file"),
    "not_a_cgroup": (["--cgroup-fd", "{devnull}"], "(fd {devnull}): not a cgroup file"),
    "read_only_fd": (["--cgroup-fd", "{read_only}"], "(fd {read_only}): Bad file descriptor"),
    "fd_not_a_number": (["--cgroup-fd", "5x"], "--cgroup-fd needs a descriptor number"),
    "fd_stdio": (["--cgroup-fd", "1"], "above 2, not 1"),
    "fd_twice": (["--cgroup-fd", "{devnull}"] * 2, "given twice"),
    "fd_missing": (["--cgroup-fd"], "--cgroup-fd needs a descriptor number"),
    "unknown_name": (["--rlimit", "stack=10"], "unknown limit stack (one of nproc,"),
    "no_equals": (["--rlimit", "nofile"], "--rlimit needs NAME=VALUE, not nofile"),
    "bad_value": (["--rlimit", "nofile=12x"], "--rlimit nofile: the value must be a decimal"),
    "negative_value": (["--rlimit", "cpu=-1"], "not -1"),
    "empty_value": (["--rlimit", "as="], "--rlimit as: the value must be"),
    "huge_value": (["--rlimit", "as=99999999999999999999"], "not 99999999999999999999"),
    "name_twice": (["--rlimit", "as=1", "--rlimit", "as=2"], "--rlimit: as given twice"),
    "setrlimit_refused": (
        ["--rlimit", "nofile=unlimited"],
        "cannot set the command's nofile limit to unlimited: Operation not permitted",
    ),
}


@pytest.mark.parametrize("mode_", ["landlock", "filters-only", "limits-only"])
@pytest.mark.parametrize("case", sorted(FAILURES))
def test_a_bad_limit_is_a_launcher_failure(launcher, cgroup, tmp_path, mode_, case):
    marker = tmp_path / "ran"
    options, mention = FAILURES[case]
    devnull = os.open("/dev/null", os.O_WRONLY)
    read_only = os.open(cgroup.path / "cgroup.procs", os.O_RDONLY)
    try:
        names = {"devnull": devnull, "read_only": read_only}
        options = [o.format(**names) for o in options]
        result = run(
            argv(launcher, mode_, options, ["touch", marker], writable=[tmp_path]),
            fds=[devnull, read_only],
        )
    finally:
        os.close(devnull)
        os.close(read_only)
    assert_launcher_failure(result, mention.format(**names))
    assert result.returncode == LAUNCHER_FAILURE
    assert not marker.exists()
    assert (cgroup.path / "cgroup.procs").read_text() == ""


def test_limits_only_takes_nothing_else(launcher, tmp_path):
    marker = tmp_path / "ran"
    result = run(argv(launcher, "limits-only", ["--ro", "/"], ["touch", marker]))
    assert_launcher_failure(
        result,
        "--limits-only takes only --cgroup-make, --cgroup-set, --cgroup-fd, --cgroup-procs and --rlimit, not --ro",
    )
    assert not marker.exists()


# ---- --cgroup-procs ----


@pytest.mark.parametrize("mode_", ["landlock", "limits-only"])
def test_the_launcher_opens_cgroup_procs_itself(launcher, cgroup, mode_):
    """What the executor uses: no descriptor kept open across its spawn. Joined before
    the launcher makes anything, as with --cgroup-fd."""
    command = ["sh", "-c", REPORT.format(cgroup.path)]
    options = ["--cgroup-procs", cgroup.path / "cgroup.procs"]
    result = run(argv(launcher, mode_, options, command))
    assert result.returncode == 0, result
    group, _fds, counted = result.stdout.splitlines()
    assert pids_line(group) == cgroup.name
    assert int(counted) == COUNTED[mode_]


def test_limits_only_before_a_runner_puts_the_runner_in_the_cgroup(launcher, cgroup):
    """bwrap's filter stage cannot open the cgroup file system (read-only there):
    `--limits-only` joins before bwrap, and bwrap's processes are in the group too."""
    need(os.access(BWRAP, os.X_OK), f"{BWRAP} is missing")
    command = ["sh", "-c", REPORT.format(cgroup.path)]
    inner = argv(launcher, "bwrap", [], command)
    outer = [str(launcher), "--limits-only", "--cgroup-procs", str(cgroup.path / "cgroup.procs")]
    result = run([*outer, "--", *inner])
    assert result.returncode == 0, result
    group, _fds, counted = result.stdout.splitlines()
    assert pids_line(group) == cgroup.name
    assert int(counted) >= 3  # bwrap, its namespace's init, the command's sh (and cat)


def test_a_cgroup_procs_that_is_no_cgroup_file_is_refused(launcher, tmp_path):
    marker = tmp_path / "ran"
    plain = tmp_path / "procs"
    plain.write_text("")
    for path in (plain, tmp_path / "missing"):
        result = run(argv(launcher, "limits-only", ["--cgroup-procs", path], ["touch", marker]))
        assert_launcher_failure(result, f"cannot join the command's cgroup ({path})")
        assert not marker.exists()


# ---- --cgroup-make and --cgroup-set ----


@pytest.mark.parametrize("mode_", ["landlock", "limits-only"])
def test_the_launcher_makes_limits_and_joins_a_group(launcher, cgroup, mode_):
    """What the executor uses for a call's own group: made, limited and joined by the
    launcher before it starts anything; a setting of a file this kernel lacks is
    skipped only when asked (-if-present)."""
    made = cgroup.path / "call"
    options = [
        *("--cgroup-make", made),
        *("--cgroup-set", f"{made}/pids.max=7"),
        *("--cgroup-set-if-present", f"{made}/no.such.file=1"),
        *("--cgroup-procs", made / "cgroup.procs"),
    ]
    command = ["sh", "-c", REPORT.format(made) + "; cat " + str(made / "pids.max")]
    try:
        result = run(argv(launcher, mode_, options, command))
        assert result.returncode == 0, result
        group, _fds, counted = result.stdout.splitlines()[:3]
        assert pids_line(group) == cgroup.name + "/call"
        assert int(counted) == COUNTED[mode_]
        assert (made / "pids.max").read_text() == "7\n"
    finally:
        remove_cgroup(made)


def test_a_group_that_exists_already_is_never_joined(launcher, cgroup, tmp_path):
    """A call joins only a group it made itself: an existing DIR (another call's) and
    a DIR that is no cgroup are refused, and nothing runs."""
    marker = tmp_path / "ran"
    existing = cgroup.path / "taken"
    existing.mkdir()
    try:
        for where, says in ((existing, "it exists already"), (tmp_path / "plain", "not on a")):
            options = ["--cgroup-make", where, "--cgroup-procs", Path(where) / "cgroup.procs"]
            result = run(argv(launcher, "limits-only", options, ["touch", marker]))
            assert_launcher_failure(result, f"cannot make the command's cgroup {where}", says)
            assert not marker.exists()
        assert not (tmp_path / "plain").exists()  # what it made on the wrong fs, removed
        assert (existing / "cgroup.procs").read_text() == ""
    finally:
        remove_cgroup(existing)


def test_a_setting_the_kernel_refuses_is_a_launcher_failure(launcher, cgroup, tmp_path):
    marker = tmp_path / "ran"
    made = cgroup.path / "refused"
    cases = [
        (f"{made}/pids.max=many", "cannot limit the command's cgroup"),
        (f"{made}/no.such.file=1", "cannot limit the command's cgroup"),
        ("=1", "--cgroup-set needs PATH=VALUE"),
    ]
    try:
        for setting, says in cases:
            options = ["--cgroup-make", made, "--cgroup-set", setting]
            result = run(argv(launcher, "limits-only", options, ["touch", marker]))
            assert_launcher_failure(result, says)
            assert not marker.exists()
            with contextlib.suppress(FileNotFoundError):
                made.rmdir()
    finally:
        with contextlib.suppress(FileNotFoundError):
            remove_cgroup(made)
