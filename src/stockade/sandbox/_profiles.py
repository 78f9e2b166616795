"""The reply a backend makes for one call: the Wrapped message (its argv, its truthful
claim, its denial signatures, runner-failure rules and spawn traits), built on what
its module says (backends/). No I/O here.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import attrs
import msgspec

from ..messages import RunnerFailureRule, Wrapped
from ..reprs import fields_repr
from ..trust import is_under
from ..vocab import Enforcement, Network, SandboxMode, SandboxPolicy, SpawnTrait
from . import _probe
from ._argv import writable_roots
from ._claims import NET_ABSTRACT as NET_ABSTRACT
from ._claims import NET_NETLINK as NET_NETLINK
from ._claims import NET_OTHER as NET_OTHER
from ._claims import NET_PATHNAME as NET_PATHNAME
from ._claims import NET_RAW as NET_RAW
from ._claims import NET_TCP as NET_TCP
from ._claims import NET_UDP as NET_UDP
from ._claims import NETWORK_EFFECTS as NETWORK_EFFECTS
from ._claims import NOT_GOVERNED as NOT_GOVERNED
from ._claims import UNFOUND_SOCKETS_GAP as UNFOUND_SOCKETS_GAP
from ._claims import FailureRule
from ._confine import Runner
from ._dispatch import confined_argv, hides_sockets
from .backends import named

if TYPE_CHECKING:
    from ..trust import Hidden, Protection
    from .backends import Backend as BackendModule


def network_claim(
    backend: str,
    mode: SandboxMode,
    network: Network,
    *,
    abi: int = 0,
    launcher: str | None = None,
    private_ipc: bool = True,
    tier: str | None = None,
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
    return named(backend).network_claim(
        mode,
        network,
        abi=abi,
        launcher=launcher,
        private_ipc=private_ipc,
        tier=tier,
        agents=agents,
    )


class HostPaths(msgspec.Struct, frozen=True):
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


@functools.cache
def reply_rules(rules: tuple[FailureRule, ...]) -> tuple[RunnerFailureRule, ...]:
    """A backend's runner-failure rules as the reply carries them (once per backend:
    each module's rules are constants)."""
    return tuple(
        RunnerFailureRule(
            exit_codes=rule.exit_codes,
            fatal_signatures=rule.fatal_signatures,
            informational_lines=rule.informational_lines,
        )
        for rule in rules
    )


def _launcher(backend: Backend) -> str | None:
    return _probe.launcher_path() if named(backend.name).FILTER_STAGE else None


@attrs.frozen
class Backend:
    """A selected runner: its backend's name and path, and (Landlock) the kernel ABI it
    found; what its backend says of it is worked out once, here (`kind`, `denials`,
    `rules`, `traits`, `as_runner`), not per call.

    `identity` pins the runner file found at probe time (device, inode, size, mtime):
    it is checked again before every spawn. `source` is the file on disk when `runner`
    is a sealed in-memory copy of it (then nothing on disk can change what runs).
    """

    __repr__ = fields_repr

    name: str
    runner: str
    abi: int | None = None
    # The operator's runner_failure_signatures (`runner_command_rules`).
    extra_rules: tuple[FailureRule, ...] = ()
    identity: tuple[int, ...] | None = None
    source: str | None = None
    # The descriptor holding the sealed copy (`runner` names it); the provider closes
    # it when it stops.
    sealed_fd: int | None = None
    # bwrap: the launcher run inside it as its filter stage, on disk (the shipped one
    # unless given; None: there is none, and the claim says what that leaves open).
    launcher: str | None = attrs.field(default=attrs.Factory(_launcher, takes_self=True))
    # Landlock: the probe found a private IPC namespace possible (`--private-ipc`).
    private_ipc: bool = True
    # Landlock: the tier it confines in (NAMESPACED or PLAIN), and why not the stronger.
    tier: str | None = None
    tier_why: str | None = None
    # Its backend's module, and what that says of this runner (set once, below).
    kind: BackendModule = attrs.field(init=False, eq=False, repr=False)
    denials: tuple[str, ...] = attrs.field(init=False, eq=False, repr=False)
    rules: tuple[RunnerFailureRule, ...] = attrs.field(init=False, eq=False, repr=False)
    traits: frozenset[SpawnTrait] = attrs.field(init=False, eq=False, repr=False)
    _runner: Runner = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        kind = named(self.name)
        rules = kind.failure_rules(launcher=self.launcher, operator=self.extra_rules)
        runner = Runner(
            self.name,
            self.runner,
            self.source,
            self.identity,
            self.launcher,
            self.private_ipc,
            self.tier,
        )
        for field, value in (
            ("kind", kind),
            ("denials", kind.denials(tier=self.tier)),
            ("rules", reply_rules(rules)),
            ("traits", kind.TRAITS),
            ("_runner", runner),
        ):
            object.__setattr__(self, field, value)

    def as_runner(self) -> Runner:
        """What the confine sequence (`_confine`) needs of it."""
        return self._runner

    @property
    def mounts(self) -> bool:
        """Whether it binds the protected paths (and so mounts over placeholders)."""
        return self._runner.mounts


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
    off (`_sockets.host_unix_sockets`, where `_dispatch.hides_sockets`); the claim names
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
    kind = backend.kind
    covered = unreadable.paths if unreadable is not None else ()
    read_gaps = unreadable_gaps(backend, unreadable)
    if kind.deny_read_gap(launcher=backend.launcher) is not None:
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
            tier=backend.tier,
        )
    # What the backend leaves ungoverned (its network gaps too, network confined).
    ungoverned = kind.file_gaps(
        policy.mode,
        policy.network,
        abi=backend.abi or 0,
        launcher=backend.launcher,
        private_ipc=backend.private_ipc,
        tier=backend.tier,
        agents=agents,
    )
    shared: tuple[str, ...] = ()
    if policy.host_temp and policy.mode is SandboxMode.WORKSPACE_WRITE:
        shared = (host_temp_gap(policy.host_temp),)
    # The network claim apart from the file claim: its gaps leave `ungoverned`.
    network_gaps: tuple[str, ...] = ()
    network_enforcement: Enforcement | None = None
    if policy.network is not Network.ON:
        network_gaps = kind.network_claim(
            policy.mode,
            policy.network,
            abi=backend.abi or 0,
            launcher=backend.launcher,
            private_ipc=backend.private_ipc,
            tier=backend.tier,
            agents=agents,
        )[1]
        network_enforcement = Enforcement.PARTIAL if network_gaps else Enforcement.FULL
        ungoverned = tuple(gap for gap in ungoverned if gap not in network_gaps)
    all_gaps = (*ungoverned, *shared, *gaps, *read_gaps)
    # A hidden socket inside a writable root cannot be removed either (a mount point:
    # "Device or resource busy", bwrap's denial text): a refusal, judged as one.
    roots = writable_roots(policy.mode, policy.workspace_root, host.temp_roots)
    kept = tuple(
        path for path in (*hidden_sockets, *covered) if any(is_under(path, root) for root in roots)
    )
    mounts = backend.mounts
    return Wrapped(
        argv=confined,
        backend=backend.name,
        enforcement=Enforcement.PARTIAL if all_gaps else Enforcement.FULL,
        denial_signatures=backend.denials,
        runner_failure_rules=backend.rules,
        gaps=all_gaps,
        network_enforcement=network_enforcement,
        network_gaps=network_gaps,
        blockers=blockers if mounts else (),
        directory_blockers=tuple(
            p.path for p in protections if p.directory and p.path in blockers and mounts
        ),
        writable=roots,
        protected=(*(p.path for p in protections if p.kind != "pin"), *kept),
        unreadable=covered,
        tier=backend.tier if kind.TIERS else None,
        fresh=fresh,
        agents=reachable_agents,
        new_repository=new_repository,
        traits=backend.traits,
    )


def unreadable_gaps(backend: Backend, unreadable: Hidden | None) -> tuple[str, ...]:
    """What deny_read leaves readable in this call: what `expand` could not hide, and
    everything when the backend has nothing to cover it with (`Backend.deny_read_gap`)."""
    if unreadable is None:
        return ()
    gaps = unreadable.gaps
    gap = backend.kind.deny_read_gap(launcher=backend.launcher)
    if unreadable.paths and gap is not None:
        gaps = (*gaps, gap)
    return gaps


def runner_command_rules(signatures: tuple[str, ...]) -> tuple[FailureRule, ...]:
    """The operator's signatures as one fatal rule (none when there are none)."""
    if not signatures:
        return ()
    return (FailureRule(None, signatures),)
