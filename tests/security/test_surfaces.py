"""The escape battery, kernel surfaces beyond the file tree: host IPC objects, setuid
and setgid bits, inode-changing ioctls, signals to host processes, abstract Unix
sockets and syscalls under a foreign ABI. Through the executor, bwrap AND Landlock,
read-only and workspace-write, from a foreground call and from a background job; a
subset again as an unprivileged caller (uid 65534).

The verdict is the host's state: the host's SysV objects (/proc/sysvipc) and POSIX
queues (opened from here), the mode of every file the command could have made,
what a nobody user's effective uid is when it runs the result, inode generations and
ctimes, whether a host process is still alive or got a signal, and what a host
server received. Every attack has an unconfined control below showing it changes that
state when nothing confines it.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import os
import shutil
import signal
import socket
import stat
import struct
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import trio

from stockade.executor.actor import ExecutorClient, open_executor
from stockade.executor.config import ExecutorConfig
from stockade.sandbox.backends import landlock
from stockade.vocab import Enforcement, ExecutionPolicy, Network

from .support import (
    ATTACK,
    DFA,
    IS_ROOT,
    MODES,
    NOBODY,
    RO,
    TAG_PREFIX,
    WW,
    describe_change,
    unconfined_nobody,
)
from .test_unprivileged import confined_as_nobody, nobody_terrain, runner  # noqa: F401

# The venv's interpreter may lie where uid 65534 cannot reach (/root): the system one.
SYSTEM_PYTHON = "/usr/bin/python3"
needs_system_python = pytest.mark.skipif(
    not os.access(SYSTEM_PYTHON, os.X_OK), reason=f"{SYSTEM_PYTHON} is needed to act as nobody"
)

pytestmark = pytest.mark.nobody
by_mode = pytest.mark.parametrize("mode", MODES, ids=lambda mode: mode.value)
by_via = pytest.mark.parametrize("via", ["run", "job"])
as_root_only = pytest.mark.skipif(not IS_ROOT, reason="spawning as uid 65534 needs a root caller")

libc = ctypes.CDLL(None, use_errno=True)
_mq = (
    libc
    if hasattr(libc, "mq_open")
    else ctypes.CDLL(ctypes.util.find_library("rt"), use_errno=True)
)
_mq.mq_open.argtypes = (ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p)
_mq.mq_unlink.argtypes = (ctypes.c_char_p,)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_int)
libc.shmdt.argtypes = (ctypes.c_void_p,)
libc.shmctl.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_void_p)
libc.msgctl.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_void_p)
IPC_CREAT, IPC_EXCL, IPC_RMID = 0o1000, 0o2000, 0
FS_IOC_GETVERSION = 0x80087601
SPECIAL_BITS = stat.S_ISUID | stat.S_ISGID


def _checked(result: int) -> int:
    if result < 0:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number))
    return result


# --- host IPC state -------------------------------------------------------------------


def sysv_objects() -> dict[tuple[str, int], tuple[str, ...]]:
    """Every SysV object on the host: (kind, id) -> its /proc/sysvipc row (key, mode,
    owner, sizes, message count, ctime...), the kernel's own account."""
    found = {}
    for kind in ("msg", "sem", "shm"):
        lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]
        for line in lines:
            fields = line.split()
            found[(kind, int(fields[1]))] = tuple(fields)
    return found


def mq_exists(name: str) -> bool:
    fd = _mq.mq_open(name.encode(), os.O_RDONLY, 0, None)
    if fd < 0:
        assert ctypes.get_errno() == errno.ENOENT, os.strerror(ctypes.get_errno())
        return False
    os.close(fd)
    return True


# /proc/sysvipc/shm: key shmid perms size cpid lpid nattch uid gid cuid cgid atime dtime ...
_SHM_ATTACH_TIMES = (11, 12)


def _without_attach_times(name: tuple[str, int], row: tuple[str, ...]) -> tuple[str, ...]:
    """A segment's attach and detach times, blanked: reading the content (shm_content)
    attaches, so a second boundary between two reads would look like a change. An attack
    that attaches still shows, in lpid (read before our own attach) and in the content."""
    if name[0] != "shm":
        return row
    return tuple("-" if index in _SHM_ATTACH_TIMES else field for index, field in enumerate(row))


class HostIpc:
    """A message queue, a semaphore set, a shared memory segment ("original") and a
    POSIX queue made on the host by the test, mode 0666 so that nobody may use them."""

    def __init__(self, tag: str) -> None:
        self.key = 0x5E000000 | int(tag[:6], 16)
        self.new_key = hex(self.key + 1)  # what the attack tries to create
        self.mq_host = f"/{TAG_PREFIX}{tag}-host"
        self.mq_new = f"/{TAG_PREFIX}{tag}-new"
        self.msqid = _checked(libc.msgget(self.key, IPC_CREAT | IPC_EXCL | 0o666))
        self.semid = _checked(libc.semget(self.key, 1, IPC_CREAT | IPC_EXCL | 0o666))
        self.shmid = _checked(libc.shmget(self.key, 4096, IPC_CREAT | IPC_EXCL | 0o666))
        self._write_shm(b"original")
        os.close(_checked(_mq.mq_open(self.mq_host.encode(), os.O_CREAT | os.O_RDWR, 0o666, None)))
        self.before = sysv_objects()

    def _write_shm(self, data: bytes) -> None:
        address = libc.shmat(self.shmid, None, 0)
        assert address not in (None, ctypes.c_void_p(-1).value)
        ctypes.memmove(address, data, len(data))
        libc.shmdt(ctypes.c_void_p(address))

    def shm_content(self) -> bytes | None:
        address = libc.shmat(self.shmid, None, 0o10000)  # SHM_RDONLY
        if address in (None, ctypes.c_void_p(-1).value):
            return None
        try:
            return ctypes.string_at(address, 8)
        finally:
            libc.shmdt(ctypes.c_void_p(address))

    def ours(self) -> dict[tuple[str, int], tuple[str, ...]]:
        """The SysV objects under our key or the attack's: other processes on the host
        (a database server's segment) change their own objects' attach times."""
        keys = {str(self.key), str(self.key + 1)}
        return {
            name: _without_attach_times(name, row)
            for name, row in sysv_objects().items()
            if row[0] in keys
        }

    def state(self) -> dict[str, object]:
        return {
            "sysv": self.ours(),
            "shm content": self.shm_content(),
            "host queue": mq_exists(self.mq_host),
            "new queue": mq_exists(self.mq_new),
        }

    def remove(self) -> None:
        """Ours, and any object an escaped (or control) attack left behind."""
        for kind, number in sysv_objects():
            if (kind, number) in self.before and number not in (
                self.msqid,
                self.semid,
                self.shmid,
            ):
                continue
            if kind == "msg":
                libc.msgctl(number, IPC_RMID, None)
            elif kind == "sem":
                libc.semctl(number, 0, IPC_RMID)
            else:
                libc.shmctl(number, IPC_RMID, None)
        for name in (self.mq_host, self.mq_new):
            _mq.mq_unlink(name.encode())


@pytest.fixture
def host_ipc(terrain) -> Iterator[HostIpc]:
    made = HostIpc(terrain.tag)
    try:
        yield made
    finally:
        made.remove()


def ipc_command(ipc: HostIpc) -> str:
    """Create, use, change and remove host IPC objects, with everyday tools and raw calls."""
    m, s, h = ipc.msqid, ipc.semid, ipc.shmid
    return (
        "ipcmk -Q; ipcmk -M 4096; ipcmk -S 1; "
        f"{ATTACK} sysv-create {ipc.new_key} -- mq-create {ipc.mq_new} "
        f"-- msg-send {m} -- shm-write {h} -- msg-set-mode {m} "
        f"-- mq-unlink {ipc.mq_host} -- sysv-remove {m} {s} {h}; "
        f"ipcrm -q {m} -s {s} -m {h}"
    )


@by_mode
@by_via
async def test_host_ipc_objects_are_out_of_reach(sandbox, host_ipc, mode, via):
    """bwrap: --unshare-ipc. Landlock: a private IPC namespace (CAP_SYS_ADMIN, or a user
    namespace for an unprivileged caller). The POSIX queues live in the IPC namespace's
    own mqueue mount, so they are private too (measured: a host queue is ENOENT inside,
    and one made inside never shows on the host)."""
    before = host_ipc.state()
    if sandbox.tier == "plain":
        # No IPC namespace: creating, removing and changing stay refused (seccomp),
        # using what exists is the gap the claim names.
        result = await sandbox.run(ipc_command(host_ipc), mode, via=via)
        after = host_ipc.state()
        assert set(after) == set(before), describe_change(before, after)
        assert landlock.LANDLOCK_SHARED_IPC_GAP in result.gaps, result.gaps
        sandbox.battery.disclosed(f"using existing host IPC objects ({mode.value}, {via})")
        return
    with sandbox.battery.attempt(
        f"host IPC objects: create/use/change/remove ({mode.value}, {via})"
    ):
        result = await sandbox.run(ipc_command(host_ipc), mode, via=via)
        after = host_ipc.state()
        assert after == before, describe_change(before, after) + result.stdout + result.stderr


# --- setuid and setgid bits -------------------------------------------------------------


def prepare_setid(terrain) -> None:
    """A setuid-root copy of `id` outside (for `cp -p`, `tar xp`), a plain copy inside."""
    helper = terrain.tools / "suid-id"
    shutil.copy2(shutil.which("id"), helper)
    helper.chmod(0o4755)
    plain = terrain.root / "plain-id"
    shutil.copy2(shutil.which("id"), plain)
    plain.chmod(0o755)


def setid_command(terrain, host_tag: str, temp_dir: str = "/tmp") -> str:
    """`temp_dir`: the writable temp directory aimed at (a confined call's private one)."""
    w, t, tmp = terrain.root, terrain.tools, f"{temp_dir}/{host_tag}"
    return (
        f"cp /usr/bin/id {tmp}-id; chmod 4755 {tmp}-id; chmod u+s {w}/plain-id; "
        f"chmod g+s {w}/plain-id; install -m 4755 /usr/bin/id {w}/installed-id; "
        f"cp -p {t}/suid-id {w}/copied-id; (cd {t} && tar cf - suid-id) | (cd {w} && tar xpf -); "
        f"mkdir -m 2755 {w}/sgid-dir; "
        f"{ATTACK} create-mode {w}/created 4755 -- tmpfile-mode {w} {w}/tmpfile 4755 "
        f"-- openat2-create {w}/openat2 4755 -- mkdir-mode {w}/sgid-dir2 2755 "
        f"-- mknod-mode {w}/mknod 4755 -- fchmodat2 {w}/plain-id 6755 -- chmod {tmp}-id 6755"
    )


def special_files(terrain, *also: str) -> list[str]:
    """Files and directories carrying a setuid or setgid bit in the root, the host
    residue (/tmp) or `also` (a call's private temp directory)."""
    names = []
    for place in (*terrain.residue(), str(terrain.root), *also):
        names.append(place)
        for top, dirs, files in os.walk(place):
            names += [os.path.join(top, entry) for entry in dirs + files]
    found = []
    for name in names:
        with contextlib.suppress(FileNotFoundError):
            mode = os.lstat(name).st_mode
            if mode & SPECIAL_BITS and not stat.S_ISLNK(mode):
                found.append(name)
    return sorted(set(found))


def euid_of_nobody_running(path: str) -> str | None:
    """The effective uid a nobody user gets from running `path` (None: it did not run)."""
    try:
        done = unconfined_nobody(path, "-u")
    except OSError:
        return None
    return done.stdout.strip() or None


@by_mode
@by_via
async def test_setuid_and_setgid_bits_are_refused(sandbox, mode, via):
    """In every confining mode, inside the root and the private temp directory too: a
    setuid-root file left there would run as root for whoever executes it later."""
    terrain = sandbox.terrain
    prepare_setid(terrain)
    tag = terrain.host_name("").rstrip("-")
    before = terrain.state(with_root=mode is RO)
    with sandbox.battery.attempt(f"setuid/setgid bits set or created ({mode.value}, {via})"):
        command = setid_command(terrain, tag, sandbox.temp_dir)
        result = await sandbox.run(command, mode, via=via)
        assert special_files(terrain, sandbox.temp_dir) == [], result.stdout + result.stderr
        for made in (f"{sandbox.temp_dir}/{tag}-id", str(terrain.root / "plain-id")):
            if os.path.exists(made):
                assert euid_of_nobody_running(made) in (str(NOBODY), None), made
        after = terrain.state(with_root=mode is RO)
        assert after == before, describe_change(before, after)


# --- inode-changing ioctls -------------------------------------------------------------


def generation(path: Path) -> int:
    fd = os.open(path, os.O_RDONLY)
    try:
        return struct.unpack("l", fcntl.ioctl(fd, FS_IOC_GETVERSION, b"\0" * 8))[0]
    finally:
        os.close(fd)


def generations(terrain) -> dict[str, int]:
    return {
        str(path): generation(path)
        for path in (
            terrain.victim,
            terrain.outside / "sub" / "keep.txt",
            terrain.root / "inside.txt",
        )
    }


@by_mode
async def test_an_inode_ioctl_does_not_change_an_outside_file(sandbox, mode):
    """FS_IOC_SETVERSION needs only ownership: it rewrites an inode's generation and
    ctime. Read-only: bwrap's read-only binds (EROFS), the Landlock seal's ioctl
    allowlist (EACCES). Workspace-write on Landlock is the metadata gap (`partial`)."""
    terrain = sandbox.terrain
    try:
        generations(terrain)
    except OSError as error:
        pytest.skip(f"this file system has no inode generation ioctl: {error}")
    command = (
        f"{ATTACK} set-version {terrain.victim} -- set-version {terrain.outside}/sub/keep.txt "
        f"-- set-version {terrain.root}/inside.txt"
    )
    before, numbers = terrain.state(with_root=mode is RO), generations(terrain)
    if sandbox.tier == "plain" and mode is WW:
        result = await sandbox.run(command, mode)
        assert result.enforcement is Enforcement.PARTIAL
        assert generations(terrain)[str(terrain.victim)] != numbers[str(terrain.victim)]
        sandbox.battery.disclosed(
            "inode ioctl (FS_IOC_SETVERSION) outside the root (workspace-write)"
        )
        return
    with sandbox.battery.attempt(f"inode ioctl FS_IOC_SETVERSION ({mode.value})"):
        result = await sandbox.run(command, mode)
        now = generations(terrain)
        if mode is WW:  # the root's own file is the workspace's business
            now.pop(str(terrain.root / "inside.txt"))
            numbers.pop(str(terrain.root / "inside.txt"))
        assert now == numbers, result.stdout
        after = terrain.state(with_root=mode is RO)
        assert after == before, describe_change(before, after)


# --- signals to host processes ----------------------------------------------------------


@contextlib.contextmanager
def signals_received(number: int) -> Iterator[list[int]]:
    """Count `number` delivered to this process (the harness) while the block runs."""
    got: list[int] = []
    previous = signal.signal(number, lambda signum, frame: got.append(signum))
    try:
        yield got
    finally:
        signal.signal(number, previous)


@contextlib.contextmanager
def host_sleeper(**kwargs) -> Iterator[subprocess.Popen]:
    sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True, **kwargs)
    try:
        yield sleeper
    finally:
        sleeper.kill()
        sleeper.wait()


def kill_command(sleeper_pid: int, harness_pid: int) -> str:
    return (
        f"kill -9 {sleeper_pid}; kill -USR2 {harness_pid}; "
        f"{ATTACK} kill {sleeper_pid} 9 -- kill {harness_pid} {int(signal.SIGUSR2)}"
    )


@by_mode
@by_via
async def test_host_processes_cannot_be_signalled(sandbox, mode, via):
    """Landlock (ABI >= 6): the domain is scoped for signals. bwrap: a private PID
    namespace, where the host's pids are not there to name."""
    name = f"signal a host process and the harness ({mode.value}, {via})"
    with (
        host_sleeper() as sleeper,
        signals_received(signal.SIGUSR2) as got,
        sandbox.battery.attempt(name),
    ):
        result = await sandbox.run(kill_command(sleeper.pid, os.getpid()), mode, via=via)
        await trio.sleep(0.2)
        assert sleeper.poll() is None, result.stdout + result.stderr
        assert got == [], result.stdout + result.stderr


# --- abstract Unix sockets --------------------------------------------------------------


@contextlib.contextmanager
def abstract_server(name: str) -> Iterator[socket.socket]:
    server = socket.socket(socket.AF_UNIX)
    server.bind(b"\0" + name.encode())
    server.listen(4)
    server.setblocking(False)
    try:
        yield server
    finally:
        server.close()


def reached(server: socket.socket) -> bool:
    """Whether a client connected (a completed connection waits in the backlog)."""
    try:
        connection, _ = server.accept()
    except BlockingIOError:
        return False
    connection.close()
    return True


@by_mode
async def test_a_host_abstract_socket_is_not_reachable_under_landlock(sandbox, mode):
    """With network on: Landlock (ABI >= 6) still scopes abstract Unix sockets to the
    domain. bwrap then shares the host's network namespace, where abstract sockets
    live: reachable (the network is on); pinned, not counted. With network off both
    refuse (tests/security/test_network.py)."""
    name = sandbox.terrain.host_name("abstract")
    with abstract_server(name) as server:
        command = f"{ATTACK} abstract-connect {name} hello"
        if sandbox.backend == "bwrap":
            result = await sandbox.run(command, mode, network=Network.ON)
            assert "abstract-connect: DONE" in result.stdout, result.stdout
            assert reached(server)
            return
        with sandbox.battery.attempt(f"connect to a host abstract unix socket ({mode.value})"):
            result = await sandbox.run(command, mode, network=Network.ON)
            assert not reached(server), result.stdout


# --- a foreign syscall ABI --------------------------------------------------------------


@by_mode
@by_via
async def test_a_syscall_under_the_i386_abi_is_killed(sandbox, mode, via):
    """int 0x80 from a 64-bit process uses i386 numbers (chmod is 15), which a filter
    reading native numbers would not see; every filter kills a non-native arch (and
    x32). The x32 ABI is not built into this kernel (its calls are ENOSYS even
    unconfined): tests/launcher covers the filter's verdict on it."""
    terrain = sandbox.terrain
    target = terrain.root / "abi-target"
    target.write_text("x\n")
    target.chmod(0o644)
    before = terrain.state(with_root=mode is RO)
    command = f"{ATTACK} i386-chmod {target} 4755; {ATTACK} i386-chmod {terrain.victim} 600"
    with sandbox.battery.attempt(f"chmod through the i386 ABI ({mode.value}, {via})"):
        result = await sandbox.run(command, mode, via=via)
        assert "i386-chmod: DONE" not in result.stdout, result.stdout
        assert stat.S_IMODE(target.stat().st_mode) == 0o644
        after = terrain.state(with_root=mode is RO)
        assert after == before, describe_change(before, after)


# --- the same, as an unprivileged caller ------------------------------------------------


@as_root_only
@by_mode
@needs_system_python
async def test_nobody_cannot_make_setuid_files(
    sandbox,
    runner,  # noqa: F811
    nobody_terrain,  # noqa: F811
    mode,
    nobody_attack,
):
    terrain = nobody_terrain
    w, tmp = terrain.root, terrain.host_name("nid")
    command = (
        f"cp /usr/bin/id {w}/n-id; chmod 4755 {w}/n-id; install -m 6755 /usr/bin/id {w}/n-inst; "
        f"cp /usr/bin/id /tmp/{tmp}; chmod u+s /tmp/{tmp}; "
        f"{nobody_attack} create-mode {w}/n-created 4755 -- tmpfile-mode {w} {w}/n-tmpfile 2755"
    )
    with sandbox.battery.attempt(f"as nobody: setuid/setgid bits ({mode.value})"):
        done = await confined_as_nobody(sandbox, runner, mode, command)
        assert special_files(terrain) == [], done.stdout.decode() + done.stderr.decode()


@as_root_only
@by_mode
@needs_system_python
async def test_nobody_cannot_reach_host_ipc_objects(
    sandbox,
    runner,  # noqa: F811
    nobody_terrain,  # noqa: F811
    host_ipc,
    mode,
    nobody_attack,
):
    """Landlock as nobody: no CAP_SYS_ADMIN, so --private-ipc goes through a user
    namespace; bwrap's --unshare-ipc does the same."""
    m, h = host_ipc.msqid, host_ipc.shmid
    command = (
        f"ipcmk -Q; ipcmk -M 4096; {nobody_attack} sysv-create {host_ipc.new_key} "
        f"-- mq-create {host_ipc.mq_new} -- msg-send {m} -- shm-write {h}"
    )
    before = host_ipc.state()
    if sandbox.tier == "plain":
        # Creating and removing stay refused; using what exists is the named gap.
        done = await confined_as_nobody(sandbox, runner, mode, command)
        after = host_ipc.state()
        assert set(after) == set(before), describe_change(before, after)
        sandbox.battery.disclosed(f"as nobody: using existing host IPC objects ({mode.value})")
        return
    with sandbox.battery.attempt(f"as nobody: host IPC objects ({mode.value})"):
        done = await confined_as_nobody(sandbox, runner, mode, command)
        after = host_ipc.state()
        assert after == before, describe_change(before, after) + done.stderr.decode()


@as_root_only
@by_mode
async def test_nobody_cannot_signal_a_process_of_its_own(
    sandbox,
    runner,  # noqa: F811
    nobody_terrain,  # noqa: F811
    mode,
):
    nobody = {"user": NOBODY, "group": NOBODY, "extra_groups": [], "cwd": "/"}
    with (
        host_sleeper(**nobody) as sleeper,
        sandbox.battery.attempt(f"as nobody: signal a host process ({mode.value})"),
    ):
        done = await confined_as_nobody(sandbox, runner, mode, f"kill -9 {sleeper.pid}")
        await trio.sleep(0.2)
        assert sleeper.poll() is None, done.stderr.decode()


# --- controls: each attack changes the host when nothing confines it ---------------------


@pytest.fixture
async def unconfined() -> AsyncIterator[ExecutorClient]:
    async with open_executor(ExecutorConfig(kill_grace=0.5)) as executor:
        yield executor


async def run_unconfined(executor: ExecutorClient, command: str, root: Path):
    policy = ExecutionPolicy(mode=DFA, workspace_root=str(root))
    result = await executor.run(executor.resolve(command, policy=policy))
    assert result.backend == "none" and result.enforcement is None
    return result


async def test_control_host_ipc(unconfined, terrain, host_ipc):
    before = host_ipc.state()
    result = await run_unconfined(unconfined, ipc_command(host_ipc), terrain.root)
    after = host_ipc.state()
    for action in ("sysv-create", "mq-create", "msg-send", "shm-write", "msg-set-mode"):
        assert f"{action}: DONE" in result.stdout, result.stdout
    assert "mq-unlink: DONE" in result.stdout and "sysv-remove: DONE" in result.stdout
    assert after["new queue"] and not after["host queue"]
    assert set(after["sysv"]) - set(before["sysv"])  # created
    assert not {("msg", host_ipc.msqid), ("shm", host_ipc.shmid)} & set(after["sysv"])  # removed


@as_root_only  # a setuid-root file for nobody to run
async def test_control_setid(unconfined, terrain):
    prepare_setid(terrain)
    tag = terrain.host_name("").rstrip("-")
    result = await run_unconfined(unconfined, setid_command(terrain, tag), terrain.root)
    made = special_files(terrain)
    for name in (
        f"/tmp/{tag}-id",
        "/plain-id",
        "/installed-id",
        "/copied-id",
        "/suid-id",
        "/created",
        "/tmpfile",
        "/openat2",
        "/mknod",
        "/sgid-dir",  # mkdir -m: mkdir(2), then chmod(2) for the special bit
    ):
        assert any(path.endswith(name) for path in made), (name, made, result.stderr)
    # mkdir(2) itself drops S_ISGID from the mode (a directory only inherits it).
    assert not any(path.endswith("/sgid-dir2") for path in made)
    # What the bit means: a nobody user running the file is root.
    assert euid_of_nobody_running(f"/tmp/{tag}-id") == "0"


async def test_control_inode_ioctl(unconfined, terrain):
    try:
        numbers = generations(terrain)
    except OSError as error:
        pytest.skip(f"this file system has no inode generation ioctl: {error}")
    before = terrain.state()
    await run_unconfined(unconfined, f"{ATTACK} set-version {terrain.victim}", terrain.root)
    assert generations(terrain)[str(terrain.victim)] != numbers[str(terrain.victim)]
    assert terrain.state()["outside/victim.txt"] != before["outside/victim.txt"]  # ctime


async def test_control_signals(unconfined, terrain):
    with host_sleeper() as sleeper, signals_received(signal.SIGUSR2) as got:
        await run_unconfined(unconfined, kill_command(sleeper.pid, os.getpid()), terrain.root)
        await trio.sleep(0.2)
        assert sleeper.poll() is not None
        assert got


async def test_control_abstract_socket(unconfined, terrain):
    name = terrain.host_name("abstract")
    with abstract_server(name) as server:
        await run_unconfined(unconfined, f"{ATTACK} abstract-connect {name} hello", terrain.root)
        assert reached(server)


async def test_control_i386_abi(unconfined, terrain):
    target = terrain.root / "abi-target"
    target.write_text("x\n")
    target.chmod(0o644)
    result = await run_unconfined(unconfined, f"{ATTACK} i386-chmod {target} 4755", terrain.root)
    if "i386-chmod: DONE" not in result.stdout:
        pytest.skip(f"no i386 emulation on this kernel: {result.stdout}{result.stderr}")
    assert stat.S_IMODE(target.stat().st_mode) == 0o4755


@as_root_only
@needs_system_python
def test_control_nobody(terrain, host_ipc, nobody_attack):
    """nobody can make setuid files, create and use host IPC objects, and kill its own
    processes, when nothing confines it."""
    public = terrain.public
    done = unconfined_nobody(
        "bash",
        "-c",
        f"cp /usr/bin/id {public}/n-id && chmod 4755 {public}/n-id; "
        f"ipcmk -Q; {nobody_attack} msg-send {host_ipc.msqid} -- shm-write {host_ipc.shmid} "
        f"-- mq-create {host_ipc.mq_new} -- create-mode {public}/n-created 4755",
    )
    assert "msg-send: DONE" in done.stdout, done.stdout + done.stderr
    assert os.stat(public / "n-id").st_mode & stat.S_ISUID, done.stderr
    assert os.stat(public / "n-created").st_mode & stat.S_ISUID, done.stdout
    assert host_ipc.shm_content().startswith(b"pwned"), done.stdout
    assert mq_exists(host_ipc.mq_new)
    with host_sleeper(user=NOBODY, group=NOBODY, extra_groups=[], cwd="/") as sleeper:
        unconfined_nobody("kill", "-9", str(sleeper.pid))
        sleeper.wait(5)
        assert sleeper.returncode == -signal.SIGKILL
