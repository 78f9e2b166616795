"""Pure argv builders for each backend: a mode, a root, the temp roots and the
network -> the argv.

Standard library only: `stockade exec` builds its argv with these and nothing else.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..modes import Network, SandboxMode
from ..network.bridge import PROXY_PORT

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from ..trust import Protection

BWRAP = "bwrap"
LANDLOCK = "landlock"
SEATBELT = "seatbelt"
RUNNER_COMMAND = "runner-command"

SEATBELT_EXEC = "/usr/bin/sandbox-exec"

# The Landlock launcher's tiers, strongest first (docs/backends.md, "Tiers"): the
# call's own PID, mount and network namespaces (IPC where it can), or none at all.
NAMESPACED = "namespaced"
PLAIN = "plain"
TIERS = (NAMESPACED, PLAIN)
# Why a call runs in the plain tier where namespaces exist (`landlock_tier: plain`).
FORCED_PLAIN = "the composition asks for it (landlock_tier: plain)"

# /proc entries whose writes change host state even from a fresh procfs; bound
# read-only over bwrap's own /proc (the "-try" form tolerates their absence).
PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")


def writable_roots(mode: SandboxMode, root: str, temp_roots: Sequence[str]) -> tuple[str, ...]:
    """Directories the mode lets a command write under, in order, without repeats."""
    if mode is SandboxMode.READ_ONLY:
        return ()
    return tuple(dict.fromkeys((root, *temp_roots)))


def pairs_only(mode: SandboxMode, network: Network, agents: bool = False) -> bool:
    """Network off in read-only: no Unix socket but connected stream or seqpacket pairs
    (the launcher's --unix-pairs-only), so no named socket can be reached at all. A
    read-only command cannot bind a named socket of its own anyway. In
    workspace-write a command's own Unix sockets (a test's server, a forkserver)
    must keep working: there the host's are hidden instead (`hides_sockets`).

    `agents` (the call is granted agent sockets, `agent_sockets`): not even in
    read-only, or the agent could not be reached either. The trade: such a call relies
    on the fresh runtime directories and the per-socket covers, as workspace-write
    does, and the claim names what those leave (a socket bound later elsewhere)."""
    return network.confined and mode is SandboxMode.READ_ONLY and not agents


def hides_sockets(
    backend: str,
    mode: SandboxMode,
    network: Network,
    *,
    launcher: str | None = None,
    private_ipc: bool = True,
    agents: bool = False,
) -> bool:
    """Whether a call covers the host's named Unix sockets (sandbox/_sockets.py): with
    network off where Unix sockets stay allowed (`pairs_only`; `agents`: the call is
    granted agent sockets), on bwrap through its filter stage (`launcher`), on the
    Landlock launcher where it can make a mount namespace (the same mechanism as a
    private IPC namespace)."""
    if network is Network.ON or pairs_only(mode, network, agents):
        return False
    if backend == BWRAP:
        return launcher is not None
    if backend == LANDLOCK:
        return private_ipc
    return False


def freshens(
    backend: str, network: Network, *, tier: str = NAMESPACED, private_ipc: bool = True
) -> bool:
    """Whether a call sees the runtime directories (`_sockets.runtime_dirs`: /run,
    /var/run, $XDG_RUNTIME_DIR, /tmp) fresh, empty and read-only: with network off or
    allowlist, on bwrap (`--tmpfs`, `--remount-ro`) and in the Landlock launcher's
    namespaced tier where it hides sockets (`--fresh-dir`). Not the plain tier (no
    mount namespace), an operator's runner_command, nor Seatbelt."""
    if not network.confined:
        return False
    if backend == BWRAP:
        return True
    return backend == LANDLOCK and tier == NAMESPACED and private_ipc


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


class FreshPlan:
    """What a call's fresh views are (`fresh_plan`): dirs (tuple[str, ...]: the runtime
    directories made fresh), keeps (tuple[str, ...]: the paths beneath them bound back,
    none beneath another), agents (tuple[tuple[str, str], ...]: (host socket, path in
    the command's view) bound inside them)."""

    __slots__ = ("agents", "dirs", "keeps")

    def __init__(
        self,
        dirs: tuple[str, ...] = (),
        keeps: tuple[str, ...] = (),
        agents: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self.dirs, self.keeps, self.agents = dirs, keeps, agents

    def fresh_of(self, path: str) -> str | None:
        """The fresh directory `path` lies strictly beneath, if any."""
        for top in self.dirs:
            if path != top and _under(path, top):
                return top
        return None

    def hides(self, path: str) -> bool:
        """Whether `path` is out of the command's sight: beneath a fresh directory and
        beneath nothing kept."""
        return self.fresh_of(path) is not None and not any(_under(path, k) for k in self.keeps)


NO_FRESH = FreshPlan()


def fresh_plan(
    dirs: Sequence[str], keep: Sequence[str], agent_sockets: Sequence[tuple[str, str]] = ()
) -> FreshPlan:
    """The fresh views of one call, from the runtime directories found (`dirs`, real
    paths), what it must keep in sight (`keep`: its roots, temp roots, working
    directory, proxy socket; real paths) and its agent sockets.

    A directory at or beneath a kept path stays the host's (it is part of a root: a
    socket bound there later is the claim's gap). An agent socket is bound at its view
    path where that lies beneath a fresh directory and beneath nothing kept; any other
    is left where it is on the host (the caller tells the command that path)."""
    fresh = tuple(d for d in dirs if not any(_under(d, k) for k in keep))
    plan = FreshPlan(fresh)
    kept = [k for k in dict.fromkeys(keep) if plan.fresh_of(k) is not None]
    plan.keeps = tuple(k for k in kept if not any(o != k and _under(k, o) for o in kept))
    plan.agents = tuple(
        (source, view)
        for source, view in agent_sockets
        if plan.fresh_of(view) is not None and not any(_under(view, k) for k in keep)
    )
    return plan


def agent_swaps(
    agent_sockets: Sequence[tuple[str, str]], plan: FreshPlan
) -> tuple[tuple[str, str], ...]:
    """The agent sockets bound over another socket in sight (a gpg-agent's restricted
    socket where gpg looks for the full one): each (host socket, view) whose view is
    another path and lies beneath no fresh directory (`plan` binds those)."""
    return tuple(
        (source, view)
        for source, view in agent_sockets
        if source != view and plan.fresh_of(view) is None
    )


def call_fresh_plan(
    backend: str,
    network: Network,
    root: str,
    temp_roots: Sequence[str],
    *,
    fresh_dirs: Sequence[str],
    keep: Sequence[str] = (),
    agent_sockets: Sequence[tuple[str, str]] = (),
    proxy: str | None = None,
    launcher: str | None = None,
    tier: str = NAMESPACED,
    private_ipc: bool = True,
) -> FreshPlan:
    """One call's fresh views (`fresh_plan`) where its backend makes them (`freshens`),
    keeping its root, temp roots, `keep` (the working directory), its proxy socket
    (allowlist) and, under bwrap, the filter stage's files in sight; else none."""
    if not fresh_dirs or not freshens(backend, network, tier=tier, private_ipc=private_ipc):
        return NO_FRESH
    kept = [root, *temp_roots, *keep]
    if proxy is not None and network is Network.ALLOWLIST:
        kept.append(proxy)
    if backend == BWRAP and launcher is not None:
        kept += [launcher, DATA_DIR]  # the filter stage and its empty file, run inside
    return fresh_plan(fresh_dirs, kept, agent_sockets)


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
    """
    hidden_sockets = [
        path for path in hidden_sockets if not in_private_dev(path) and not fresh.hides(path)
    ]
    unreadable = [path for path in unreadable if not fresh.hides(path)]
    hide = bool(hidden_sockets) and launcher is not None and network.confined
    cover = bool(unreadable) and launcher is not None
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
        # Only for the filter stage to hide sockets with; it drops both before exec.
        *(("--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP") if hide or cover else ()),
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
        if not any(_under(kept, w) for w in writable_list):
            args += ["--ro-bind", kept, kept]
    for source, view in (*fresh.agents, *swaps):
        args += ["--ro-bind", source, view]
    for writable in writable_list:
        args += ["--bind", writable, writable]
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
        if proxy is not None and network is Network.ALLOWLIST:
            args += ["--proxy-bridge", f"{PROXY_PORT}:{proxy}"]
    return (*args, "--", *argv)


def has_filter_stage(argv: Sequence[str]) -> bool:
    """Whether bwrap's `argv` runs the launcher as its filter stage (`bwrap OPTIONS --
    LAUNCHER --filters-only ...`), which refuses TIOCSTI and unblocks the terminal's
    SIGINT and SIGQUIT for the command (the runner's caller holds them blocked)."""
    try:
        end = list(argv).index("--", 1)
    except ValueError:
        return False
    return tuple(argv[end + 2 : end + 3]) == ("--filters-only",)


def unreadable_args(paths: Sequence[str]) -> list[str]:
    """The launcher's options covering each deny_read path (`--deny-read`)."""
    args: list[str] = []
    for path in paths:
        args += ["--deny-read", path]
    return args


def in_private_dev(path: str) -> bool:
    """Whether `path` lies in `/dev`, which bwrap replaces with a private one."""
    return path == "/dev" or path.startswith("/dev/")


def hiding_args(hidden_sockets: Sequence[str]) -> list[str]:
    """The launcher's options covering each socket with the package's empty file."""
    args = ["--empty", EMPTY_FILE]
    for path in hidden_sockets:
        args += ["--hide-socket", path]
    return args


# A missing protected FILE is blocked by an empty read-only file (the package's own
# `_data/empty`): a write to it is refused with the same `Read-only file system` as
# any other, and an empty `config` or `stockade.yml` means nothing to git or stockade.
# A name whose placeholder must say something (trust.PLACEHOLDER_TEXT: a `commondir`
# of ".") gets the package's file holding that text. Which blockers are directories
# is the trust base's call (`Protection.directory`).
DATA_DIR = os.path.join(os.path.dirname(os.path.dirname(__file__)), "_data")
EMPTY_FILE = os.path.join(DATA_DIR, "empty")


def placeholder_source(path: str) -> str:
    """The package file a blocker at `path` binds: its name's text, or empty."""
    from ..trust import PLACEHOLDER_TEXT

    name = os.path.basename(path)
    return os.path.join(DATA_DIR, name.lstrip(".")) if name in PLACEHOLDER_TEXT else EMPTY_FILE


def protection_args(protection: Protection) -> list[str]:
    path = protection.path
    if protection.kind == "pin":
        return ["--bind", path, path]
    if protection.kind == "read-only":
        return ["--ro-bind", path, path]
    if protection.directory:
        return ["--tmpfs", path, "--remount-ro", path]
    return ["--ro-bind", placeholder_source(path), path]


def landlock_argv(
    launcher: str,
    mode: SandboxMode,
    root: str,
    temp_roots: Sequence[str],
    argv: Sequence[str],
    *,
    tier: str = NAMESPACED,
    private_ipc: bool = True,
    network: Network = Network.OFF,
    hidden_sockets: Sequence[str] = (),
    unreadable: Sequence[str] = (),
    proxy: str | None = None,
    protections: Sequence[Protection] = (),
    grants: Grants | None = None,
    fresh: FreshPlan = NO_FRESH,
    agents: bool = False,
    swaps: Sequence[tuple[str, str]] = (),
) -> tuple[str, ...]:
    """The shipped launcher, in `tier`: write only the grants (`swaps`: agent sockets
    bound over the socket at their view, `agent_swaps`; NAMESPACED only).

    NAMESPACED: read and execute everywhere but `unreadable` (covered in the call's own
    mount namespace); `protections` (the trust base's) bound there as bwrap binds them;
    network off or allowlist, a network namespace of the call's own (its loopback up:
    a command's own servers work, the host's are out of reach), allowlist's one way out
    the bridge to `proxy`. `private_ipc` (the probe found it possible): an IPC
    namespace of its own, or the launcher fails; without it host IPC objects are not
    created, removed or changed (seccomp), and the claim names what stays open.
    `hidden_sockets` are covered in the mount namespace. `fresh` (`fresh_plan`):
    runtime directories made fresh and read-only there, last, over every other mount,
    with what they keep and the agent sockets bound back inside (`--fresh-dir`,
    `--keep`, `--bind-socket`). `agents`: the call is granted agent sockets (no
    `--unix-pairs-only`, `pairs_only`).

    PLAIN (no namespace can be made): read and execute everywhere but `grants` leaves
    out (deny_read's complement, `trust.secrets.complement_grants`); network off, no
    socket family but AF_UNIX and no TCP port; allowlist, TCP to the bridge's port on
    the host's loopback alone (the launcher picks the port and sets the proxy
    variables).

    Either way: network off in read-only, no Unix socket but connected pairs.
    """
    # Every caller waits for the launcher (the executor, `stockade exec`): killed, it
    # takes the call with it, as bwrap's --die-with-parent does.
    args: list[str] = [launcher, "--die-with-parent"]
    if tier == PLAIN:
        args.append("--plain")
        if grants is None:
            args += ["--ro", "/"]
        else:
            for path in grants.lists:
                args += ["--list", path]
            for path in grants.reads:
                args += ["--ro-try", path]
    else:
        args += ["--ro", "/"]
    args += ["--rw", "/dev/null"]
    if mode is SandboxMode.READ_ONLY:
        args.append("--seal-metadata")
    for writable in writable_roots(mode, root, temp_roots):
        args += ["--rw", writable]
    if tier == PLAIN:
        if network is Network.ALLOWLIST and proxy is not None:
            args += ["--proxy-bridge", f"0:{proxy}"]
        elif network.confined:
            args.append("--no-network")
    else:
        # Every mount but the grants read-only in the call's mount namespace (metadata
        # changes outside the roots refused, as under bwrap; the same refusal text).
        args.append("--read-only-host")
        if private_ipc:
            args.append("--private-ipc")
        if network.confined:
            # Its own network namespace (loopback only); with allowlist, its one way
            # out is the bridge to this call's proxy endpoint (`proxy`, checked by the
            # confine sequence).
            args.append("--private-network")
            if network is Network.ALLOWLIST and proxy is not None:
                args += ["--proxy-bridge", f"{PROXY_PORT}:{proxy}"]
    if pairs_only(mode, network, agents):
        # (The bridge stands outside the command's filters: it still reaches the proxy.)
        args.append("--unix-pairs-only")
    if tier == NAMESPACED:
        hidden_sockets = [path for path in hidden_sockets if not fresh.hides(path)]
        if network.confined and hidden_sockets and private_ipc:
            args += hiding_args(hidden_sockets)
        args += unreadable_args(unreadable)
        for protection in protections:
            args += launcher_protection_args(protection)
        for top in fresh.dirs:
            args += ["--fresh-dir", top]
        # The protected paths in a fresh directory stay in sight as bound above (a
        # write there is still a denial, not a missing directory).
        for kept in (*fresh.keeps, *(p.path for p in protections if fresh.fresh_of(p.path))):
            args += ["--keep", kept]
        for source, view in (*fresh.agents, *swaps):
            args += ["--bind-socket", source, view]
    return (*args, "--", *argv)


class Grants:
    """Read access in the plain tier, where nothing can be covered: reads (tuple[str,
    ...]: read and execute beneath each), lists (tuple[str, ...]: list each directory
    and every one beneath it, read no file there)."""

    __slots__ = ("lists", "reads")

    def __init__(self, reads: tuple[str, ...], lists: tuple[str, ...]) -> None:
        self.reads, self.lists = reads, lists


def launcher_protection_args(protection: Protection) -> list[str]:
    """The launcher's options for one protected path (the namespaced tier), as
    `protection_args` gives bwrap's."""
    path = protection.path
    if protection.kind == "pin":
        return ["--bind-pin", path]
    if protection.kind == "read-only":
        return ["--bind-ro", path]
    if protection.directory:
        return ["--empty-dir", path]
    return ["--bind-file", placeholder_source(path), path]


def seatbelt_profile(
    mode: SandboxMode,
    root: str,
    temp_roots: Sequence[str],
    protections: Sequence[Protection] = (),
    network: Network = Network.OFF,
    unreadable: Sequence[str] = (),
) -> tuple[str, dict[str, str]]:
    """SBPL text and its parameters: everything allowed but file writes off the grants
    (and, network off, every network operation, Unix sockets by name included).

    `file-write*` covers data, create, unlink, mode, owner, times and xattrs, so
    Seatbelt governs every promised file effect.
    """
    roots = writable_roots(mode, root, temp_roots)
    params = {f"WRITABLE_ROOT_{index}": path for index, path in enumerate(roots)}
    lines = [
        "(version 1)",
        "(allow default)",
        "(deny file-write*)",
        '(allow file-write* (literal "/dev/null"))',
    ]
    if network.confined:
        lines.append("(deny network*)")
    lines += [f'(allow file-write* (subpath (param "{name}")))' for name in params]
    # The last matching rule wins: protected paths stay unwritable inside the grants.
    for index, protection in enumerate(p for p in protections if p.kind != "pin"):
        name = f"PROTECTED_{index}"
        params[name] = protection.path
        lines.append(f'(deny file-write* (subpath (param "{name}")))')
    for index, path in enumerate(unreadable):
        name = f"UNREADABLE_{index}"
        params[name] = path
        lines.append(f'(deny file-read* file-write* (subpath (param "{name}")))')
    return "\n".join(lines) + "\n", params


def seatbelt_argv(
    mode: SandboxMode,
    root: str,
    temp_roots: Sequence[str],
    argv: Sequence[str],
    protections: Sequence[Protection] = (),
    network: Network = Network.OFF,
    unreadable: Sequence[str] = (),
) -> tuple[str, ...]:
    profile, params = seatbelt_profile(mode, root, temp_roots, protections, network, unreadable)
    defines = [f"-D{name}={value}" for name, value in params.items()]
    return (SEATBELT_EXEC, "-p", profile, *defines, "--", *argv)


def confined_argv(
    backend: str,
    runner: str,
    mode: SandboxMode,
    root: str,
    temp_roots: Sequence[str],
    argv: Sequence[str],
    *,
    new_session: bool = False,
    protections: Sequence[Protection] = (),
    launcher: str | None = None,
    private_ipc: bool = True,
    network: Network = Network.OFF,
    hidden_sockets: Sequence[str] = (),
    unreadable: Sequence[str] = (),
    proxy: str | None = None,
    tier: str = NAMESPACED,
    grants: Grants | None = None,
    fresh_dirs: Sequence[str] = (),
    keep: Sequence[str] = (),
    agent_sockets: Sequence[tuple[str, str]] = (),
) -> tuple[str, ...]:
    """The argv to spawn instead of `argv`, for the selected backend and runner.

    The Landlock launcher binds the protections in its namespaced tier; in its plain
    tier it cannot, and the caller claims `partial` for them (`_guard`).
    `launcher` is bwrap's filter stage (not an operator's runner_command: what it can
    see inside is its own business); `private_ipc` is the Landlock launcher's.
    `network` is the call's effective value; `hidden_sockets` the host's named Unix
    sockets found for it (`_sockets.host_unix_sockets`, where `hides_sockets`);
    `unreadable` the deny_read paths that exist (`trust.secrets.DenyRead.expand`).

    `fresh_dirs`: the runtime directories found (`_sockets.runtime_dirs`), made fresh
    where the backend can (`freshens`), keeping the root, the temp roots, the proxy
    and `keep` (the working directory) in sight. `agent_sockets`: (host socket, path
    in the command's view), each bound at its view path inside a fresh directory
    (`fresh_plan` says which were; the others stay at their host path, never hidden),
    and with any, read-only keeps named sockets (`pairs_only`).
    """
    plan = call_fresh_plan(
        backend,
        network,
        root,
        temp_roots,
        fresh_dirs=fresh_dirs,
        keep=keep,
        agent_sockets=agent_sockets,
        proxy=proxy,
        launcher=launcher,
        tier=tier,
        private_ipc=private_ipc,
    )
    agents = bool(agent_sockets)
    swaps = agent_swaps(agent_sockets, plan)
    if backend in (BWRAP, RUNNER_COMMAND):
        return bwrap_argv(
            runner,
            mode,
            root,
            temp_roots,
            argv,
            new_session=new_session,
            protections=protections,
            launcher=launcher if backend == BWRAP else None,
            network=network,
            hidden_sockets=hidden_sockets,
            unreadable=unreadable if backend == BWRAP else (),
            proxy=proxy if backend == BWRAP else None,
            fresh=plan if backend == BWRAP else NO_FRESH,
            agents=agents,
            swaps=swaps,
        )
    if backend == LANDLOCK:
        return landlock_argv(
            runner,
            mode,
            root,
            temp_roots,
            argv,
            tier=tier,
            private_ipc=private_ipc,
            network=network,
            hidden_sockets=hidden_sockets,
            unreadable=unreadable,
            proxy=proxy,
            protections=protections,
            grants=grants,
            fresh=plan,
            agents=agents,
            swaps=swaps if tier == NAMESPACED else (),
        )
    if backend == SEATBELT:
        return seatbelt_argv(mode, root, temp_roots, argv, protections, network, unreadable)
    raise ValueError(f"unknown sandbox backend {backend!r}")
