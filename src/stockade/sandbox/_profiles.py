"""Each backend's dialect: the Wrapped reply, denial signatures, runner-failure rules,
and the truthful enforcement claim. The argv itself comes from `_argv`. No I/O here.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Final

import attrs

from ..messages import RunnerFailureRule, Wrapped
from ..trust import is_under
from ..vocab import Enforcement, Network, SandboxMode, SandboxPolicy
from ._argv import BWRAP as BWRAP
from ._argv import LANDLOCK as LANDLOCK
from ._argv import NAMESPACED, PLAIN, confined_argv, hides_sockets, pairs_only, writable_roots
from ._argv import RUNNER_COMMAND as RUNNER_COMMAND
from ._argv import SEATBELT as SEATBELT
from ._confine import Runner
from ._probe import launcher_path

if TYPE_CHECKING:
    from ..trust import Protection
    from ..trust.secrets import Hidden

LANDLOCK_PARTIAL_NOTICE: Final = "landlock-run: partial enforcement (older Landlock ABI)"

# The stderr text each kernel path produces on a refused write (measured, FACTS.md).
# "Device or resource busy": renaming over or removing a protected path, which bwrap
# keeps as a mount point (the trust base's binds).
BWRAP_DENIAL: Final = ("Read-only file system", "Device or resource busy")
LANDLOCK_DENIAL: Final = ("Permission denied",)
# The namespaced tier also refuses through its mounts, as bwrap does: a write or a
# metadata change on the read-only host or a protected bind, a rename of a mount point.
LANDLOCK_NAMESPACED_DENIAL: Final = (*BWRAP_DENIAL, *LANDLOCK_DENIAL)
SEATBELT_DENIAL: Final = ("Operation not permitted",)

# The launcher reserves 125 for its own failures and always prints one fatal line;
# bwrap and sandbox-exec reserve no status, so only their line prefix is evidence.
LANDLOCK_RULES: Final = (
    RunnerFailureRule(
        exit_codes=frozenset({125}),
        fatal_signatures=("landlock-run:",),
        informational_lines=(LANDLOCK_PARTIAL_NOTICE,),
    ),
)
BWRAP_RULES: Final = (RunnerFailureRule(exit_codes=None, fatal_signatures=("bwrap:",)),)
# bwrap runs the launcher as its filter stage (`--filters-only`): its failures too.
BWRAP_FILTERED_RULES: Final = (
    *BWRAP_RULES,
    RunnerFailureRule(exit_codes=frozenset({125}), fatal_signatures=("landlock-run:",)),
)
SEATBELT_RULES: Final = (RunnerFailureRule(exit_codes=None, fatal_signatures=("sandbox-exec:",)),)

# Effects Landlock cannot govern on any ABI: the launcher seals them with seccomp in
# read-only mode, but workspace-write must allow them inside the root, so there they
# stay ungoverned outside it too (tests/launcher: test_landlock_does_not_govern_...).
LANDLOCK_METADATA_EFFECTS: Final = ("chmod", "chown", "utimes", "xattr", "inode flags")
# Truncate from ABI 3, device ioctl from ABI 5, signal and abstract-socket scoping from 6.
LANDLOCK_FULL_ABI: Final = 6
# Without a private IPC namespace the launcher refuses creating, removing and changing
# host IPC objects (seccomp); using the ones that exist is not refused.
LANDLOCK_SHARED_IPC_GAP: Final = (
    "existing host IPC objects (sending to and receiving from message queues, "
    "attaching shared memory, semaphore operations)"
)
# bwrap without its filter stage (the launcher is missing): nothing refuses the bits.
BWRAP_UNFILTERED_GAP: Final = "setuid and setgid bits inside the writable roots"


# --- network effects (network off; under `on` the network is allowed, not a gap) -------

NET_TCP: Final = "tcp connect and bind"
NET_UDP: Final = "udp"
NET_RAW: Final = "raw and packet sockets"
NET_NETLINK: Final = "netlink"
NET_OTHER: Final = "other socket families (vsock, ...)"
NET_ABSTRACT: Final = "abstract unix sockets"
NET_PATHNAME: Final = "pathname unix sockets"
NETWORK_EFFECTS: Final = (
    NET_TCP,
    NET_UDP,
    NET_RAW,
    NET_NETLINK,
    NET_OTHER,
    NET_ABSTRACT,
    NET_PATHNAME,
)
NOT_GOVERNED: Final = "not governed"

# What hiding the host's named sockets when a call starts cannot reach
# (sandbox/_sockets.py): a network namespace does not cover them, and neither
# Landlock (ABI <= 7) nor a seccomp filter can see the path a connect() names. The
# runtime directories the command sees fresh (`_argv.freshens`) hold none at all,
# whenever bound; what the call keeps of them (a root, its temp directory, its
# working directory lying there) is the host's, and so is one that lies in a root.
UNFOUND_SOCKETS_GAP: Final = (
    "pathname unix sockets not found when the call starts (bound later, in another "
    "network or mount namespace, by a relative path, or under another name), outside "
    "the runtime directories the command sees fresh and empty (/run, /var/run, "
    "$XDG_RUNTIME_DIR, /tmp) or in the call's own roots and working directory there"
)
# No fresh runtime directories either: the plain tier has no mount namespace, and with
# filtered IPC the launcher makes none to cover in.
LANDLOCK_PATHNAME_GAP: Final = (
    "pathname unix sockets of host processes, in /run, /tmp and the other runtime "
    "directories too, whenever bound (Landlock does not govern connect)"
)
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
DENY_READ_RUNNER_COMMAND_GAP: Final = (
    "deny_read: its paths stay readable (an operator's runner_command cannot be told to hide them)"
)

_NETNS = "a private network namespace (its own loopback only)"
_ALLOWLIST_TCP = (
    "a private network namespace whose one way out is stockade's bridge on its own "
    "loopback to the proxy, which connects only to the listed destinations"
)
_FAMILY_FILTER = "refused: no socket family but AF_UNIX (seccomp, EAFNOSUPPORT)"
_TCP_ONLY_FILTER = (
    "refused: no socket but AF_UNIX and TCP over IPv4 or IPv6 (seccomp, EAFNOSUPPORT)"
)
# The plain tier's allowlist: no network namespace, so the bridge listens on the host's
# loopback and Landlock's TCP rule lets the command connect to its port, on any
# address (the rules know ports, not addresses).
PLAIN_BRIDGE_PORT_GAP: Final = (
    "tcp to the bridge's port on any other address, or to another service listening "
    "on that port (no network namespace: Landlock's TCP rules know ports only)"
)
_PLAIN_ALLOWLIST_TCP = (
    "the one TCP port Landlock allows is the bridge's, on the host's loopback, to the "
    "proxy, which connects only to the listed destinations"
)
_PAIRS_ONLY = "refused: no Unix socket but connected stream or seqpacket pairs"
_HIDDEN = (
    "the runtime directories (/run, /var/run, $XDG_RUNTIME_DIR, /tmp) are fresh, empty "
    "and read-only in the command's view (its roots, temp directory, working directory, "
    "proxy and granted agent sockets bound back); elsewhere each one found when the call "
    "starts is covered by an empty read-only file"
)


def network_claim(
    backend: str,
    mode: SandboxMode,
    network: Network,
    *,
    abi: int = 0,
    launcher: str | None = None,
    private_ipc: bool = True,
    tier: str = NAMESPACED,
    agents: bool = False,
) -> tuple[dict[str, str], tuple[str, ...]]:
    """How `backend` governs each network effect under `mode` with `network` off, and
    the gaps it leaves (an effect it does not govern reads "not governed: GAP").

    `launcher`: bwrap's filter stage; `abi`, `private_ipc`, `tier`: the Landlock
    launcher's. `agents`: the call is granted agent sockets, so read-only too keeps
    named sockets (`_argv.pairs_only`) and names what the covers leave. Network `on`
    governs nothing by design: no effects, no gaps.
    """
    if network is Network.ON:
        return {}, ()
    pairs = pairs_only(mode, network, agents)
    hidden = hides_sockets(
        backend, mode, network, launcher=launcher, private_ipc=private_ipc, agents=agents
    )
    effects: dict[str, str] = {}
    gaps: list[str] = []

    def open_gap(effect: str, gap: str) -> None:
        effects[effect] = f"{NOT_GOVERNED}: {gap}"
        gaps.append(gap)

    def pathname_effect(unhidden_gap: str, *, refused: bool = pairs) -> None:
        """Named sockets: none but pairs (`refused`), else each one found covered,
        else open."""
        if refused:
            effects[NET_PATHNAME] = _PAIRS_ONLY
        elif hidden:
            effects[NET_PATHNAME] = _HIDDEN
            gaps.append(UNFOUND_SOCKETS_GAP)
        else:
            open_gap(NET_PATHNAME, unhidden_gap)

    if backend == SEATBELT:
        return dict.fromkeys(NETWORK_EFFECTS, "refused: (deny network*) (not exercised here)"), ()
    if backend == LANDLOCK and tier == NAMESPACED:
        # --private-network: the call's own network namespace (its loopback up), the
        # family filter of --netns-only, and with allowlist the bridge to its proxy.
        effects[NET_TCP] = _ALLOWLIST_TCP if network is Network.ALLOWLIST else _NETNS
        effects[NET_UDP] = effects[NET_NETLINK] = effects[NET_ABSTRACT] = _NETNS
        effects[NET_RAW] = "refused: no capability, and the filter refuses AF_PACKET"
        effects[NET_OTHER] = "refused by the launcher's filter (EAFNOSUPPORT)"
        pathname_effect(LANDLOCK_PATHNAME_GAP)
        return {effect: effects[effect] for effect in NETWORK_EFFECTS}, tuple(gaps)
    if backend == LANDLOCK and network is Network.ALLOWLIST:
        # The plain tier: the host's network, TCP alone, to the bridge's port alone.
        effects[NET_TCP] = _PLAIN_ALLOWLIST_TCP
        gaps.append(PLAIN_BRIDGE_PORT_GAP)
        for effect in (NET_UDP, NET_RAW, NET_NETLINK, NET_OTHER):
            effects[effect] = _TCP_ONLY_FILTER
    elif backend == LANDLOCK:
        tcp = _FAMILY_FILTER
        if abi >= 4:
            tcp += "; Landlock handles TCP bind and connect with no port allowed"
        effects[NET_TCP] = tcp
        for effect in (NET_UDP, NET_RAW, NET_NETLINK, NET_OTHER):
            effects[effect] = _FAMILY_FILTER
    if backend == LANDLOCK:
        if pairs:
            effects[NET_ABSTRACT] = _PAIRS_ONLY
        elif abi >= 6:
            effects[NET_ABSTRACT] = "refused: Landlock scope (no connection out of the domain)"
        else:
            # In the network claim too (the file claim lists it with the launcher's
            # other older-ABI gaps, landlock_enforcement, for every network).
            open_gap(NET_ABSTRACT, "abstract unix sockets (ABI < 6)")
        pathname_effect(LANDLOCK_PATHNAME_GAP)
        return {effect: effects[effect] for effect in NETWORK_EFFECTS}, tuple(gaps)
    # bwrap, or an operator's bwrap-compatible runner (no filter stage).
    filtered = backend == BWRAP and launcher is not None
    effects[NET_TCP] = effects[NET_UDP] = effects[NET_NETLINK] = _NETNS
    if network is Network.ALLOWLIST:
        effects[NET_TCP] = _ALLOWLIST_TCP
    effects[NET_RAW] = "refused: no CAP_NET_RAW (and a private network namespace)"
    if filtered:
        effects[NET_RAW] += "; AF_PACKET refused by the filter stage"
        effects[NET_OTHER] = "refused by the filter stage (EAFNOSUPPORT)"
    else:
        open_gap(NET_OTHER, UNFILTERED_FAMILIES_GAP)
    effects[NET_ABSTRACT] = _NETNS
    # Only the filter stage refuses Unix sockets (no filter stage: no pairs-only).
    pathname_effect(UNHIDDEN_PATHNAME_GAP, refused=filtered and pairs)
    return {effect: effects[effect] for effect in NETWORK_EFFECTS}, tuple(gaps)


@attrs.frozen
class HostPaths:
    """Host facts a profile needs: the temp roots workspace-write may also write (the
    provider passes the call's own, `SandboxPolicy.temp_roots`)."""

    temp_roots: tuple[str, ...] = ("/tmp",)


def host_temp_gap(host_temp: tuple[str, ...]) -> str:
    """The claim of a call that may write the host's shared temp roots (`allow_host_temp`):
    what it leaves there, every process of the host may pick up."""
    return (
        f"the host's shared temp roots ({', '.join(host_temp)}) are writable "
        "(allow_host_temp): other processes of the host may pick up what a command "
        "leaves there"
    )


# Pure, from a handful of values, and asked on every confined call: computed once each.
# The plain tier on an ABI without signal scoping: the guardian that ends the call's
# processes is a process of the same user the command may signal.
PLAIN_UNSCOPED_GAP: Final = (
    "the call's processes may outlive it (no Landlock signal scope before ABI 6: a "
    "command can kill the process that ends them)"
)


@functools.cache
def landlock_enforcement(
    mode: SandboxMode,
    abi: int,
    *,
    private_ipc: bool = True,
    network: Network,
    tier: str = NAMESPACED,
    agents: bool = False,
) -> tuple[Enforcement, tuple[str, ...]]:
    """What the launcher governs under `mode` on `abi` with `network` in `tier`, and
    the effects it leaves open (file effects, then network effects when it is off;
    `agents`: the call is granted agent sockets, `network_claim`).

    `private_ipc`: the probe found the launcher can give commands an IPC namespace of
    their own (CAP_SYS_ADMIN, or a user namespace), so `--private-ipc` is passed.
    NAMESPACED makes every mount but the writable grants read-only in the call's own
    mount namespace (`--read-only-host`), so metadata changes outside the roots are
    refused as under bwrap; PLAIN cannot, and says so.
    """
    ungoverned: list[str] = []
    if abi < 3:
        ungoverned.append("truncate")
    if abi < 5:
        ungoverned.append("device ioctl")
    if abi < LANDLOCK_FULL_ABI:
        # A network namespace of the call's own (namespaced, network off or allowlist)
        # holds the host's abstract sockets, its PID namespace the host's processes.
        if tier == PLAIN or network is Network.ON:
            ungoverned.append("abstract unix sockets")
        if tier == PLAIN:
            ungoverned += ["signals to host processes", PLAIN_UNSCOPED_GAP]
    if not private_ipc:
        ungoverned.append(LANDLOCK_SHARED_IPC_GAP)
    if mode is not SandboxMode.READ_ONLY and tier == PLAIN:
        ungoverned += [
            f"{effect} outside the writable roots" for effect in LANDLOCK_METADATA_EFFECTS
        ]
    _, network_gaps = network_claim(
        LANDLOCK, mode, network, abi=abi, private_ipc=private_ipc, tier=tier, agents=agents
    )
    ungoverned += network_gaps
    return (Enforcement.PARTIAL if ungoverned else Enforcement.FULL), tuple(ungoverned)


@functools.cache
def bwrap_gaps(
    mode: SandboxMode,
    launcher: str | None,
    *,
    network: Network,
    backend: str = BWRAP,
    agents: bool = False,
) -> tuple[str, ...]:
    """What bwrap leaves open under `mode`: with its filter stage, only what network
    off cannot reach (named sockets not found when the call starts); without it,
    setuid bits where something is writable (read-only binds refuse them elsewhere)
    and, network off, the socket families and named sockets the stage would handle."""
    gaps: list[str] = []
    if not launcher and mode is not SandboxMode.READ_ONLY:
        gaps.append(BWRAP_UNFILTERED_GAP)
    gaps += network_claim(backend, mode, network, launcher=launcher, agents=agents)[1]
    return tuple(gaps)


@attrs.frozen
class Backend:
    """A selected runner: its name and path, and (Landlock) the kernel ABI it found.

    `identity` pins the runner file found at probe time (device, inode, size, mtime):
    it is checked again before every spawn. `source` is the file on disk when `runner`
    is a sealed in-memory copy of it (then nothing on disk can change what runs).
    """

    name: str
    runner: str
    abi: int | None = None
    extra_rules: tuple[RunnerFailureRule, ...] = ()
    identity: tuple[int, ...] | None = None
    source: str | None = None
    # The descriptor holding the sealed copy (`runner` names it); the provider closes
    # it when it stops.
    sealed_fd: int | None = None
    # bwrap: the launcher run inside it as its filter stage, on disk (the shipped one
    # unless given; None: there is none, and the claim says what that leaves open).
    launcher: str | None = attrs.field(
        default=attrs.Factory(
            lambda self: launcher_path() if self.name == BWRAP else None, takes_self=True
        )
    )
    # Landlock: the probe found a private IPC namespace possible (`--private-ipc`).
    private_ipc: bool = True
    # Landlock: the tier it confines in (NAMESPACED or PLAIN), and why not the stronger.
    tier: str | None = None
    tier_why: str | None = None

    def as_runner(self) -> Runner:
        """What the confine sequence (`_confine`) needs of it."""
        return Runner(
            self.name,
            self.runner,
            self.source,
            self.identity,
            self.launcher,
            self.private_ipc,
            self.tier,
        )

    @property
    def mounts(self) -> bool:
        """Whether it binds the protected paths (and so mounts over placeholders)."""
        return self.as_runner().mounts


def wrap(
    backend: Backend,
    policy: SandboxPolicy,
    host: HostPaths,
    argv: tuple[str, ...],
    *,
    new_session: bool = False,
    protections: tuple[Protection, ...] = (),
    gaps: tuple[str, ...] = (),
    blockers: tuple[str, ...] = (),
    hidden_sockets: tuple[str, ...] = (),
    confined: tuple[str, ...] | None = None,
    unreadable: Hidden | None = None,
    agents: bool = False,
    fresh: tuple[str, ...] = (),
    reachable_agents: tuple[tuple[str, str], ...] = (),
    new_repository: str | None = None,
) -> Wrapped:
    """The Wrapped reply for `argv` under `policy` on the selected `backend`.

    `new_session` (bwrap dialects) detaches the command from a terminal the caller
    keeps; the Landlock launcher refuses TIOCSTI itself. `protections` and `gaps`
    come from the trust base (`_guard`): binds to add, and what stays unenforced;
    `blockers` are the mount points the runner will create on the host.
    `hidden_sockets`: the host's named Unix sockets this call covers, with network
    off (`_sockets.host_unix_sockets`, where `_argv.hides_sockets`); the claim names
    what that cannot cover whether or not any were found. `confined`: the argv the
    confine sequence built for exactly these (`_confine.confine`), else built here.
    `unreadable`: the deny_read paths this call covers, and what it could not.
    `agents`: the call is granted agent sockets (`_confine.Call.agent_sockets`): with
    network off in read-only, named sockets are then not refused outright, and the
    claim says what the covers leave (`network_claim`). `fresh`: the runtime
    directories the command sees fresh; `reachable_agents`: (agent, path) for each
    granted agent socket (`Wrapped.agents`). `new_repository`: the guard's
    (`Guard.new_repository`, `Wrapped.new_repository`).
    """
    covered = unreadable.paths if unreadable is not None else ()
    read_gaps = unreadable_gaps(backend, unreadable)
    if backend.name == RUNNER_COMMAND or (backend.name == BWRAP and backend.launcher is None):
        covered = ()  # nothing covers them (`unreadable_gaps` says so)
    if not hides_sockets(
        backend.name,
        policy.mode,
        policy.network,
        launcher=backend.launcher,
        private_ipc=backend.private_ipc,
        agents=agents,
    ):
        hidden_sockets = ()
    if confined is None:
        confined = confined_argv(
            backend.name,
            backend.runner,
            policy.mode,
            policy.workspace_root,
            host.temp_roots,
            argv,
            new_session=new_session,
            protections=protections,
            launcher=backend.launcher,
            private_ipc=backend.private_ipc,
            network=policy.network,
            hidden_sockets=hidden_sockets,
            unreadable=covered,
            tier=backend.tier or NAMESPACED,
        )
    denial: tuple[str, ...]
    rules: tuple[RunnerFailureRule, ...]
    ungoverned: tuple[str, ...] = ()
    match backend.name:
        case "bwrap":
            enforcement, denial = Enforcement.FULL, BWRAP_DENIAL
            rules = BWRAP_FILTERED_RULES if backend.launcher else BWRAP_RULES
            ungoverned = bwrap_gaps(
                policy.mode, backend.launcher, network=policy.network, agents=agents
            )
        case "runner-command":
            # The operator asserts a bwrap-compatible runner; its own signatures
            # are the only runner-failure evidence. It gets no filter stage, so
            # network off leaves what that stage would refuse.
            enforcement, denial, rules = Enforcement.FULL, BWRAP_DENIAL, backend.extra_rules
            ungoverned = network_claim(RUNNER_COMMAND, policy.mode, policy.network, agents=agents)[
                1
            ]
        case "landlock":
            enforcement, ungoverned = landlock_enforcement(
                policy.mode,
                backend.abi or 0,
                private_ipc=backend.private_ipc,
                network=policy.network,
                tier=backend.tier or NAMESPACED,
                agents=agents,
            )
            denial = LANDLOCK_DENIAL if backend.tier == PLAIN else LANDLOCK_NAMESPACED_DENIAL
            rules = LANDLOCK_RULES
        case _:
            enforcement, denial, rules = Enforcement.FULL, SEATBELT_DENIAL, SEATBELT_RULES
    shared: tuple[str, ...] = ()
    if policy.host_temp and policy.mode is SandboxMode.WORKSPACE_WRITE:
        shared = (host_temp_gap(policy.host_temp),)
    # The network claim apart from the file claim: its gaps leave `ungoverned`.
    network_gaps: tuple[str, ...] = ()
    network_enforcement: Enforcement | None = None
    if policy.network is not Network.ON:
        network_gaps = network_claim(
            backend.name,
            policy.mode,
            policy.network,
            abi=backend.abi or 0,
            launcher=backend.launcher,
            private_ipc=backend.private_ipc,
            tier=backend.tier or NAMESPACED,
            agents=agents,
        )[1]
        network_enforcement = Enforcement.PARTIAL if network_gaps else Enforcement.FULL
        ungoverned = tuple(gap for gap in ungoverned if gap not in network_gaps)
        if backend.name == LANDLOCK and not ungoverned:
            enforcement = Enforcement.FULL  # it was partial for network gaps alone
    all_gaps = (*ungoverned, *shared, *gaps, *read_gaps)
    # A hidden socket inside a writable root cannot be removed either (a mount point:
    # "Device or resource busy", bwrap's denial text): a refusal, judged as one.
    roots = writable_roots(policy.mode, policy.workspace_root, host.temp_roots)
    kept = tuple(
        path for path in (*hidden_sockets, *covered) if any(is_under(path, root) for root in roots)
    )
    return Wrapped(
        argv=confined,
        backend=backend.name,
        enforcement=Enforcement.PARTIAL if all_gaps else enforcement,
        denial_signatures=denial,
        runner_failure_rules=rules,
        gaps=all_gaps,
        network_enforcement=network_enforcement,
        network_gaps=network_gaps,
        blockers=blockers if backend.mounts else (),
        directory_blockers=tuple(
            p.path for p in protections if p.directory and p.path in blockers and backend.mounts
        ),
        writable=roots,
        protected=(*(p.path for p in protections if p.kind != "pin"), *kept),
        unreadable=covered,
        tier=backend.tier if backend.name == LANDLOCK else None,
        fresh=fresh,
        agents=reachable_agents,
        new_repository=new_repository,
    )


def unreadable_gaps(backend: Backend, unreadable: Hidden | None) -> tuple[str, ...]:
    """What deny_read leaves readable in this call: what `expand` could not hide, and
    everything when the backend has nothing to cover it with."""
    if unreadable is None:
        return ()
    gaps = unreadable.gaps
    if unreadable.paths and backend.name == RUNNER_COMMAND:
        gaps = (*gaps, DENY_READ_RUNNER_COMMAND_GAP)
    elif unreadable.paths and backend.name == BWRAP and backend.launcher is None:
        gaps = (*gaps, DENY_READ_UNFILTERED_GAP)
    return gaps


def runner_command_rules(signatures: tuple[str, ...]) -> tuple[RunnerFailureRule, ...]:
    """The operator's signatures as one fatal rule (none when there are none)."""
    if not signatures:
        return ()
    return (RunnerFailureRule(exit_codes=None, fatal_signatures=signatures),)
