"""The Landlock launcher (`landlock-run`, shipped in this package): Linux's second
candidate, in the strongest tier the host allows (docs/backends.md, "Tiers"):
NAMESPACED (the call's own user, PID, mount, IPC and network namespaces: the rows
bwrap has) or PLAIN (Landlock, seccomp and no_new_privs alone; a child subreaper ends
every process of the call).

Standard library only: `stockade exec` builds its argv with this module.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence

from ...modes import Enforcement, Network, SandboxMode, SpawnTrait
from ...network import PROXY_PORT
from ...trust import DEFAULT_PROTECTED, is_under
from .. import _probe
from .._argv import (
    NO_FRESH,
    FreshPlan,
    Grants,
    hiding_args,
    launcher_protection_args,
    may_hide_sockets,
    pairs_only,
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
    PAIRS_ONLY,
    Effects,
    FailureRule,
)
from .._probe import Unfinished, Verdict, run_probe, tail

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from typing import Final

    from ...messages import TierReport
    from ...trust import DenyRead, Hidden, Protection

NAME: Final = "landlock"

# The Landlock launcher's tiers, strongest first (docs/backends.md, "Tiers"): the
# call's own PID, mount and network namespaces (IPC where it can), or none at all.
NAMESPACED = "namespaced"
PLAIN = "plain"
TIERS: tuple[str, ...] = (NAMESPACED, PLAIN)
# Why a call runs in the plain tier where namespaces exist (`landlock_tier: plain`).
FORCED_PLAIN = "the composition asks for it (landlock_tier: plain)"
# The launcher is the runner: it reads the call's limit options itself, ends every
# process it started before it exits (its group may be reused), and dies with its
# caller (--die-with-parent), so a one-shot caller waits for it.
TRAITS = frozenset(
    {
        SpawnTrait.LIMITS_IN_RUNNER,
        SpawnTrait.REAPS_ALL,
        SpawnTrait.CALLER_WAITS,
        SpawnTrait.STARTED_FD,
    }
)
FILTER_STAGE = False
# Only its namespaced tier binds the protected paths (`mounts`).
PROTECTS = False
ALLOWLIST = True
CLAIMED = True


# --- finding and probing it ----------------------------------------------------------

# Compiled where a probe is judged: `stockade exec` with a remembered verdict never
# needs `re`.
_LANDLOCK_PROBE_LINE = (
    r"^landlock-run: probe ok: abi=(?P<abi>\d+) enforcement=(?P<enforcement>full|partial)"
    r"(?: tier=(?P<tier>namespaced|plain))?(?: ipc=(?P<ipc>private|filtered))?"
    r"(?: (?P<started>started=yes))?(?: why=(?P<why>.*))?$"
)


def judge_landlock_probe(launcher: str, returncode: int, stdout: str, stderr: str) -> Verdict:
    """Usable when `landlock-run --probe` exits 0 with its report line."""
    import re

    match = re.search(_LANDLOCK_PROBE_LINE, stdout, re.MULTILINE)
    if returncode != 0 or match is None:
        why = f"landlock-run --probe failed (exit {returncode}): {tail(stderr or stdout)}"
        return Verdict(NAME, False, launcher, why)
    if match["started"] is None:
        # Every call passes --started-fd (SpawnTrait.STARTED_FD): such a launcher would
        # refuse them all while its probe said it was usable.
        why = (
            f"the Landlock launcher at {launcher} was built before this stockade (its "
            "probe does not say started=yes); reinstall stockade to rebuild it"
        )
        return Verdict(NAME, False, launcher, why)
    tier = match["tier"] or NAMESPACED
    return Verdict(
        NAME,
        True,
        launcher,
        abi=int(match["abi"]),
        ipc=match["ipc"] if tier == NAMESPACED else "filtered",
        tier=tier,
        tier_why=None if tier == NAMESPACED else no_namespace_reason(match["why"]),
    )


def no_namespace_reason(error: str | None) -> str:
    """Why the launcher confines without namespaces, in words a person can act on."""
    return (
        f"no namespace can be made for this user ({error or 'refused'}: user namespaces "
        "are disabled or refused here, and there is no CAP_SYS_ADMIN)"
    )


def probe_landlock(timeout: float) -> Verdict:
    launcher = _probe.launcher_path()
    if not os.access(launcher, os.X_OK):
        why = f"the Landlock launcher is missing at {launcher}; reinstall stockade"
        return Verdict(NAME, False, launcher, why)
    ran = run_probe((launcher, "--probe"), timeout)
    if isinstance(ran, Unfinished):
        return Verdict(NAME, False, launcher, ran.why, transient=ran.transient)
    return judge_landlock_probe(launcher, *ran)


def probe(timeout: float, *, explicit: str | None = None, roots: Sequence[str] = ()) -> Verdict:
    """`landlock-run --probe` (`probe_landlock`); the launcher is the package's own."""
    return probe_landlock(timeout)


def locate() -> str | None:
    """The shipped launcher, which a remembered verdict is keyed on."""
    return _probe.launcher_path()


def sealed_copy(runner: str, timeout: float) -> tuple[str, int] | None:
    """A sealed in-memory copy of the launcher, run as `/proc/<pid>/fd/<n>`.

    The harness execs this copy for its whole life, so replacing the launcher file
    on disk afterwards changes nothing it runs. The copy is probed once; None (use
    the file, identity-pinned) where the kernel refuses to run a memfd
    (`vm.memfd_noexec`) or the copy cannot be made. Returns the path and the
    descriptor, which the provider closes when it stops.
    """
    import contextlib
    import fcntl

    seals = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE
    try:
        fd = os.memfd_create("stockade-landlock-run", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    except OSError:
        return None
    try:
        with open(runner, "rb") as source:
            data = source.read()
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fchmod(fd, 0o500)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    except OSError:
        os.close(fd)
        return None
    copy = f"/proc/{os.getpid()}/fd/{fd}"
    ran = run_probe((copy, "--probe"), timeout)
    if isinstance(ran, tuple) and judge_landlock_probe(copy, *ran).usable:
        return copy, fd
    with contextlib.suppress(OSError):
        os.close(fd)
    return None


def configured(verdict: Verdict, tier: str) -> Verdict:
    """`landlock_tier: plain`: the plain tier, although namespaces could be made (a
    verdict in the plain tier already keeps the host's reason)."""
    if tier != PLAIN or verdict.tier == PLAIN:
        return verdict
    return verdict._replace(ipc="filtered", tier=PLAIN, tier_why=FORCED_PLAIN)


# --- one call ------------------------------------------------------------------------


def mounts(*, tier: str | None) -> bool:
    """Its namespaced tier binds the protected paths as bwrap does; the plain tier
    cannot protect a path inside a writable grant at all."""
    return (tier or NAMESPACED) == NAMESPACED


def allowlist_problem(*, launcher: str | None) -> str | None:
    return None


def hides_sockets(*, launcher: str | None, private_ipc: bool) -> bool:
    """Where it can make a mount namespace (the same mechanism as a private IPC
    namespace)."""
    return private_ipc


def freshens(*, tier: str | None, private_ipc: bool) -> bool:
    """`--fresh-dir`, in the namespaced tier where it hides sockets."""
    return (tier or NAMESPACED) == NAMESPACED and private_ipc


def in_sight(*, launcher: str | None) -> tuple[str, ...]:
    return ()


def read_grants(
    deny: DenyRead, unreadable: Hidden, writable: Sequence[str], *, tier: str | None
) -> tuple[Hidden, Grants | None]:
    """The namespaced tier covers each path. The plain tier's way to hide: read grants
    around each hidden path (none can be covered without a mount namespace); one inside
    a writable root stays readable, a gap."""
    if tier != PLAIN:
        return unreadable, None
    from ...trust import Hidden

    reads, lists, gaps = deny.complement(unreadable.paths, writable)
    kept = tuple(path for path in unreadable.paths if not any(is_under(path, w) for w in writable))
    return Hidden(kept, (*unreadable.gaps, *gaps)), Grants(reads, lists)


def landlock_argv(
    runner: str,
    mode: SandboxMode,
    root: str,
    temp_roots: Sequence[str],
    argv: Sequence[str],
    *,
    tier: str | None = NAMESPACED,
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
    new_session: bool = False,
    launcher: str | None = None,
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

    Either way: network off in read-only, no Unix socket but connected pairs. (It
    refuses TIOCSTI itself: `new_session` is bwrap's, and so is `launcher`, its filter
    stage: this launcher, `runner`, is the runner.)
    """
    tier = tier or NAMESPACED
    # Every caller waits for the launcher (the executor, `stockade exec`): killed, it
    # takes the call with it, as bwrap's --die-with-parent does.
    args: list[str] = [runner, "--die-with-parent"]
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


# Its argv, as the confine sequence asks for one (`_dispatch.confined_argv`).
argv = landlock_argv


# --- its reply -----------------------------------------------------------------------

LANDLOCK_PARTIAL_NOTICE: Final = "landlock-run: partial enforcement (older Landlock ABI)"

# The text a refused write produces under Landlock (measured, FACTS.md).
LANDLOCK_DENIAL: Final = ("Permission denied",)
# The namespaced tier also refuses through its mounts, as bwrap does: a write or a
# metadata change on the read-only host or a protected bind, a rename of a mount point.
LANDLOCK_NAMESPACED_DENIAL: Final = (*MOUNT_DENIAL, *LANDLOCK_DENIAL)
# The launcher reserves 125 for its own failures and always prints one fatal line.
LANDLOCK_RULES: Final = (
    FailureRule(frozenset({125}), ("landlock-run:",), (LANDLOCK_PARTIAL_NOTICE,)),
)


def denials(*, tier: str | None) -> tuple[str, ...]:
    return LANDLOCK_DENIAL if tier == PLAIN else LANDLOCK_NAMESPACED_DENIAL


def failure_rules(
    *, launcher: str | None, operator: tuple[FailureRule, ...]
) -> tuple[FailureRule, ...]:
    return LANDLOCK_RULES


def deny_read_gap(*, launcher: str | None) -> str | None:
    """The launcher covers deny_read's paths itself (or grants around them)."""
    return None


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

# No fresh runtime directories either: the plain tier has no mount namespace, and with
# filtered IPC the launcher makes none to cover in.
LANDLOCK_PATHNAME_GAP: Final = (
    "pathname unix sockets of host processes, in /run, /tmp and the other runtime "
    "directories too, whenever bound (Landlock does not govern connect)"
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


def landlock_network_claim(
    mode: SandboxMode,
    network: Network,
    *,
    abi: int = 0,
    launcher: str | None = None,
    private_ipc: bool = True,
    tier: str | None = NAMESPACED,
    agents: bool = False,
) -> tuple[dict[str, str], tuple[str, ...]]:
    """How the launcher governs each network effect with `network` confined, in `tier`
    on `abi`; `agents`: the call is granted agent sockets, so read-only too keeps
    named sockets (`_argv.pairs_only`) and the claim names what the covers leave.
    Network `on` governs nothing by design: no effects, no gaps."""
    if network is Network.ON:
        return {}, ()
    tier = tier or NAMESPACED
    pairs = pairs_only(mode, network, agents)
    hidden = private_ipc and may_hide_sockets(mode, network, agents)
    claim = Effects()
    effects = claim.effects
    if tier == NAMESPACED:
        # --private-network: the call's own network namespace (its loopback up), the
        # family filter of --netns-only, and with allowlist the bridge to its proxy.
        effects[NET_TCP] = ALLOWLIST_TCP if network is Network.ALLOWLIST else NETNS
        effects[NET_UDP] = effects[NET_NETLINK] = effects[NET_ABSTRACT] = NETNS
        effects[NET_RAW] = "refused: no capability, and the filter refuses AF_PACKET"
        effects[NET_OTHER] = "refused by the launcher's filter (EAFNOSUPPORT)"
        claim.pathname(LANDLOCK_PATHNAME_GAP, refused=pairs, hidden=hidden)
        return claim.claim()
    if network is Network.ALLOWLIST:
        # The plain tier: the host's network, TCP alone, to the bridge's port alone.
        effects[NET_TCP] = _PLAIN_ALLOWLIST_TCP
        claim.gaps.append(PLAIN_BRIDGE_PORT_GAP)
        for effect in (NET_UDP, NET_RAW, NET_NETLINK, NET_OTHER):
            effects[effect] = _TCP_ONLY_FILTER
    else:
        tcp = _FAMILY_FILTER
        if abi >= 4:
            tcp += "; Landlock handles TCP bind and connect with no port allowed"
        effects[NET_TCP] = tcp
        for effect in (NET_UDP, NET_RAW, NET_NETLINK, NET_OTHER):
            effects[effect] = _FAMILY_FILTER
    if pairs:
        effects[NET_ABSTRACT] = PAIRS_ONLY
    elif abi >= 6:
        effects[NET_ABSTRACT] = "refused: Landlock scope (no connection out of the domain)"
    else:
        # In the network claim too (the file claim lists it with the launcher's other
        # older-ABI gaps, landlock_enforcement, for every network).
        claim.open_gap(NET_ABSTRACT, "abstract unix sockets (ABI < 6)")
    claim.pathname(LANDLOCK_PATHNAME_GAP, refused=pairs, hidden=hidden)
    return claim.claim()


# Its network claim (`_profiles.network_claim`; `launcher` is bwrap's, unused here).
network_claim = landlock_network_claim


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
    _, network_gaps = landlock_network_claim(
        mode, network, abi=abi, private_ipc=private_ipc, tier=tier, agents=agents
    )
    ungoverned += network_gaps
    return (Enforcement.PARTIAL if ungoverned else Enforcement.FULL), tuple(ungoverned)


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
    return landlock_enforcement(
        mode, abi, private_ipc=private_ipc, network=network, tier=tier or NAMESPACED, agents=agents
    )[1]


# --- `stockade probe` ------------------------------------------------------------------

# What the plain tier leaves open in workspace-write, besides its kernel's gaps: it
# has no mount namespace to bind the protected paths in.
PLAIN_PROTECTED_GAP: Final = "protected paths (" + ", ".join(DEFAULT_PROTECTED) + ")"


def report_gaps(mode: SandboxMode, *, tier: str | None) -> tuple[str, ...]:
    if mode is SandboxMode.WORKSPACE_WRITE and tier == PLAIN:
        return (PLAIN_PROTECTED_GAP,)
    return ()


def tier_reports(verdict: Verdict) -> tuple[TierReport, ...]:
    """The launcher's tiers, strongest first: which this host allows, and what each
    would claim per confining mode (network off)."""
    from ...messages import NetworkClaim, TierReport

    reports = []
    for tier in TIERS:
        usable = verdict.usable and (tier == PLAIN or verdict.tier == NAMESPACED)
        why_not = None
        if not verdict.usable:
            why_not = verdict.why_not
        elif not usable:
            why_not = verdict.tier_why
        enforcement: dict[str, Enforcement] = {}
        ungoverned: dict[str, tuple[str, ...]] = {}
        network_off: dict[str, NetworkClaim] = {}
        private_ipc = verdict.ipc == "private" and tier == NAMESPACED
        if verdict.usable:
            for mode in (SandboxMode.READ_ONLY, SandboxMode.WORKSPACE_WRITE):
                abi = verdict.abi or 0
                _, gaps = landlock_enforcement(
                    mode, abi, private_ipc=private_ipc, network=Network.ON, tier=tier
                )
                gaps = (*gaps, *report_gaps(mode, tier=tier))
                enforcement[mode.value] = Enforcement.PARTIAL if gaps else Enforcement.FULL
                if gaps:
                    ungoverned[mode.value] = gaps
                effects, net_gaps = landlock_network_claim(
                    mode, Network.OFF, abi=abi, private_ipc=private_ipc, tier=tier
                )
                network_off[mode.value] = NetworkClaim(
                    enforcement=Enforcement.PARTIAL if net_gaps else Enforcement.FULL,
                    ungoverned=net_gaps,
                    effects=effects,
                )
        reports.append(
            TierReport(
                tier=tier,
                usable=usable,
                why_not=why_not,
                selected=usable and (verdict.tier or NAMESPACED) == tier,
                enforcement=enforcement,
                ungoverned=ungoverned,
                network_off=network_off,
            )
        )
    return tuple(reports)
