"""THE confine sequence: one command, its policy and the selected runner -> the confined
argv. Synchronous and standard library only: the ProviderActor and `stockade exec` run it.

The steps, in order (`confine`): resolve the workspace root, check the call's temp
roots, check the runner chosen beforehand (the actor's cached verdict, or exec's
remembered one: `remembered_runner`), guard the call (the trust base: what stays
read-only, what is refused), hold the placeholders bwrap mounts over, find the host's
sockets to hide, build the argv. Holding is exec's step only: the executor holds its
placeholders on its own loop, for as long as its processes use them, and retries
with the same `placeholder_attempts`.
"""

from __future__ import annotations

import os

from ..errors import CommandStartError, InvalidPolicy, SandboxUnavailable
from ..modes import Network, SandboxMode, SpawnTrait
from ..trust import check_temp_roots, installation_links, resolve_workspace_root
from . import _probe
from ._argv import NO_FRESH, agent_swaps, writable_roots
from ._dispatch import call_fresh_plan, confined_argv, freshens, hides_sockets, refuse_allowlist
from ._guard import guard_call
from .backends import choose, named

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from types import TracebackType

    from ..trust import DenyRead, Hidden, PathFacts, Protection
    from ._guard import Guard
    from ._guard_memo import GuardMemo
    from ._probe import Verdict

# Confine again when the disk changed between the guard and holding its placeholders.
ATTEMPTS = 3

# Plain classes with slots, not namedtuples (each namedtuple costs ~0.1 ms to define:
# `stockade exec` imports this module on every run) nor typing.NamedTuple (typing
# alone would be a fifth of its run). Field types are in each docstring.


class Runner:
    """The selected runner as the sequence uses it: backend (str), runner (str: what
    is run), source (str | None: the file on disk when `runner` is a sealed in-memory
    copy of it), identity (tuple | None: `runner_identity` of the file probed, checked
    again before each call), launcher (str | None: bwrap's filter stage), private_ipc
    (bool: the Landlock launcher can give a command an IPC namespace of its own),
    tier (str | None: the Landlock launcher's, namespaced or plain), tier_why (str |
    None: why not the stronger), kind (Backend: its backend's module)."""

    __slots__ = (
        "backend",
        "identity",
        "kind",
        "launcher",
        "private_ipc",
        "runner",
        "source",
        "tier",
        "tier_why",
    )

    def __init__(
        self,
        backend: str,
        runner: str,
        source: str | None = None,
        identity: tuple[int, ...] | None = None,
        launcher: str | None = None,
        private_ipc: bool = False,
        tier: str | None = None,
        tier_why: str | None = None,
    ) -> None:
        self.backend, self.runner, self.source = backend, runner, source
        self.identity, self.launcher, self.private_ipc = identity, launcher, private_ipc
        self.tier, self.tier_why = tier, tier_why
        # Its backend's module (backends/), looked up once.
        self.kind = named(backend)

    @property
    def mounts(self) -> bool:
        """Whether it binds the protected paths itself, and so mounts over the
        placeholders the guard makes (`Backend.mounts`)."""
        return self.kind.mounts(tier=self.tier)

    @property
    def on_disk(self) -> str:
        """The file the trust base judges: the source of a sealed copy, else the runner."""
        return self.source or self.runner


class Call:
    """One command to confine: argv (tuple[str, ...]), mode (SandboxMode), root (str:
    the workspace root, checked again here), temp_roots (tuple[str, ...]: the call's
    private temp directory, and the host's where granted), network (Network), proxy
    (str | None: the Unix socket of this call's proxy endpoint, network allowlist),
    workdir (str | None: the real path of the directory the command starts in, as
    judged through a descriptor by `trust.judge_workdir`; None: the root),
    agent_sockets (tuple[tuple[str, str], ...]: granted agent sockets, each (the
    host's socket, the path the command should reach it at, inside a runtime
    directory such as /run/stockade-agent/ssh.sock); never hidden, and bound at that
    path where the call sees the runtime directories fresh (`Confined.agents` says
    where each one is reachable)), agent_files (tuple[tuple[str, tuple[str, ...]],
    ...]: the key directories of the granted agents, each with the names in it that
    stay readable, `DenyRead.expand`'s `readable`), unsearched (tuple[str, ...]: roots
    beside the root not searched for deny_read's in-root names: the tool caches,
    where no secret of the person's is kept), own_roots (tuple[str, ...]: roots beside
    the root that are stockade's own and that only confined commands work in, given no
    protected names: the default tool cache directory (danger-full-access is never
    pointed at it; one a composition names may be the person's tools' too) and `stockade
    exec`'s private temp directory (its one command's, removed when it ends)), in_sight
    (tuple[str, ...]: paths kept in sight where the runtime directories are fresh, as
    the working directory is: the harness's CA bundle directory, which `guard_rules`
    keeps read-only too; one missing is left out)."""

    __slots__ = (
        "agent_files",
        "agent_sockets",
        "argv",
        "in_sight",
        "mode",
        "network",
        "own_roots",
        "proxy",
        "root",
        "temp_roots",
        "unsearched",
        "workdir",
    )

    def __init__(
        self,
        argv: tuple[str, ...],
        mode: SandboxMode,
        root: str,
        temp_roots: tuple[str, ...],
        network: Network,
        proxy: str | None = None,
        workdir: str | None = None,
        agent_sockets: tuple[tuple[str, str], ...] = (),
        agent_files: tuple[tuple[str, tuple[str, ...]], ...] = (),
        unsearched: tuple[str, ...] = (),
        own_roots: tuple[str, ...] = (),
        in_sight: tuple[str, ...] = (),
    ) -> None:
        self.argv, self.mode, self.root = argv, mode, root
        self.temp_roots, self.network, self.proxy = temp_roots, network, proxy
        self.workdir, self.agent_sockets = workdir, agent_sockets
        self.agent_files, self.unsearched = agent_files, unsearched
        self.own_roots = own_roots
        self.in_sight = in_sight


class GuardRules:
    """What the composition and the host add to every call's guard (`_guard.guard_call`):
    protected (tuple[str, ...]: `protected_paths`), trusted_files (tuple[str, ...]: the
    composition files), installation (tuple[str, ...]: stockade's own files),
    allow_unprotected_installation (bool), startup (the caller's startup files, or
    None: read at each guard), deny_read (DenyRead | None: what no confined call may
    read; None: nothing hidden), installation_links (tuple[str, ...]: the links on the
    way to the installation, trust.installation_links())."""

    __slots__ = (
        "allow_unprotected_installation",
        "deny_read",
        "installation",
        "installation_links",
        "protected",
        "startup",
        "trusted_files",
    )

    def __init__(
        self,
        protected: Sequence[str] = (),
        trusted_files: Sequence[str] = (),
        installation: Sequence[str] = (),
        allow_unprotected_installation: bool = False,
        startup: Sequence[tuple[str, str]] | None = None,
        deny_read: DenyRead | None = None,
        installation_links: Sequence[str] = (),
    ) -> None:
        self.deny_read = deny_read
        self.installation_links = installation_links
        self.protected = protected
        self.trusted_files = trusted_files
        self.installation = installation
        self.allow_unprotected_installation = allow_unprotected_installation
        self.startup = startup


class Confined:
    """What the sequence made: argv (tuple[str, ...]: to spawn instead of the command),
    root (str: the workspace root, resolved), guard (Guard: its protections, gaps and
    the placeholders it mounts over), hidden (tuple[str, ...]: the host sockets
    covered), held (list[int]: the fds holding those placeholders; empty unless the
    caller asked to hold them), unreadable (Hidden | None: the deny_read paths
    covered, and what could not be), fresh (tuple[str, ...]: the runtime directories
    the command sees fresh and empty), agents (tuple[tuple[str, str], ...]: each
    granted agent socket, (its host path, where the command reaches it: the view path
    where it was bound there, else the host path)), traits (frozenset[SpawnTrait]: what
    a spawn of `argv` must know of its runner, `Backend.TRAITS`: the fast path's
    `Wrapped.traits`)."""

    __slots__ = (
        "agents",
        "argv",
        "fresh",
        "guard",
        "held",
        "hidden",
        "root",
        "traits",
        "unreadable",
    )

    def __init__(
        self,
        argv: tuple[str, ...],
        root: str,
        guard: Guard,
        hidden: tuple[str, ...],
        held: list[int],
        unreadable: Hidden | None = None,
        fresh: tuple[str, ...] = (),
        agents: tuple[tuple[str, str], ...] = (),
        traits: frozenset[SpawnTrait] = frozenset(),
    ) -> None:
        self.argv, self.root, self.guard, self.hidden, self.held = argv, root, guard, hidden, held
        self.unreadable, self.fresh, self.agents = unreadable, fresh, agents
        self.traits = traits


def guard_rules(
    config: object | None,
    installation: Sequence[str],
    startup: Sequence[tuple[str, str]] | None = None,
    deny_read: DenyRead | None = None,
) -> GuardRules:
    """The guard rules of a provider's `config` (a ProviderConfig; None: none mounted,
    the defaults), with stockade's `installation` (trust.installation_paths()) and the
    caller's `startup` files (trust.startup_files(); None: read at each guard), and
    the `deny_read` list a long-lived caller keeps (its search memo with it; None:
    the config's, made now)."""
    if deny_read is None:
        deny_read = _deny_read(config)
    links = installation_links()
    if config is None:
        return GuardRules((), (), installation, False, startup, deny_read, links)
    return GuardRules(
        # What every call keeps in sight it may not write either (the CA bundle).
        (*config.protected_paths, *config.in_sight),  # type: ignore[attr-defined]
        config.trusted_files,  # type: ignore[attr-defined]
        installation,
        config.allow_unprotected_installation,  # type: ignore[attr-defined]
        startup,
        deny_read,
        links,
    )


def _deny_read(config: object | None) -> DenyRead:
    from ..trust import deny_read_for

    return deny_read_for(config)


def runner_identity(path: str) -> tuple[int, ...] | None:
    """(device, inode, size, mtime, ctime) of the runner file, or None when it cannot be
    read. The ctime cannot be set from user space: an in-place rewrite that restores
    the size and mtime still changes it."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def remembered_runner(
    platform: str,
    backend: str,
    *,
    runner_command: str | None,
    timeout: float,
    writable_roots: Sequence[str],
    bwrap_path: str | None,
    tier: str = "auto",
) -> Runner:
    """The runner of a one-shot caller (`stockade exec`): the first candidate of the
    platform chain that enforces, its usable verdict remembered per user
    (`backends.choose(remember=True)`), or the operator's `runner_command`; `tier`
    "plain" forces the Landlock launcher's plain tier (`landlock_tier`).
    SandboxUnavailable, naming each candidate's reason, when none is usable."""
    chosen = choose(
        platform,
        backend,
        runner_command=runner_command,
        timeout=timeout,
        remember=True,
        writable_roots=writable_roots,
        bwrap_path=bwrap_path,
    )
    selected = chosen.selected
    if selected is None or selected.runner is None:
        raise SandboxUnavailable(chosen.detail)
    return runner_of(selected, tier)


def runner_of(verdict: Verdict, tier: str = "auto") -> Runner:
    """The runner a usable `verdict` selects, as the composition shapes it (`tier`:
    its `landlock_tier`)."""
    kind = named(verdict.backend)
    verdict = kind.configured(verdict, tier)
    return Runner(
        verdict.backend,
        verdict.runner,
        launcher=_probe.filter_launcher() if kind.FILTER_STAGE else None,
        private_ipc=verdict.ipc == "private",
        tier=verdict.tier,
        tier_why=verdict.tier_why,
    )


def checked_runner(runner: Runner | None, unavailable: str) -> Runner:
    """`runner`, still the file that was probed; SandboxUnavailable(`unavailable`) when
    nothing was selected."""
    if runner is None:
        raise SandboxUnavailable(unavailable)
    if runner.identity is not None and runner_identity(runner.runner) != runner.identity:
        raise SandboxUnavailable(
            f"the sandbox runner {runner.runner} is gone or changed on disk since it "
            "was probed; restore it, or restart the harness to probe again"
        )
    return runner


def judge(
    runner: Runner,
    mode: SandboxMode,
    root: str,
    temp_roots: tuple[str, ...],
    rules: GuardRules,
    memo: GuardMemo | None = None,
    own_roots: tuple[str, ...] = (),
) -> Guard:
    """The trust base's answer for one call (`_guard.guard_call`; its refusal is not
    raised), from `memo` (the provider's, `_guard_memo`) while the disk it read is
    unchanged. `own_roots`: `Call.own_roots`."""

    def compute(facts: PathFacts | None) -> Guard:
        return guard_call(
            runner.backend,
            mode,
            root,
            temp_roots,
            mounts=runner.mounts,
            runner=runner.on_disk,
            extra_protected=rules.protected,
            trusted_files=rules.trusted_files,
            installation=rules.installation,
            allow_unprotected_installation=rules.allow_unprotected_installation,
            startup=rules.startup,
            facts=facts,
            own_roots=own_roots,
            installation_links=rules.installation_links,
        )

    if memo is None:
        return compute(None)
    key = (runner.backend, runner.tier, runner.on_disk, mode, root, temp_roots, own_roots)
    return memo.answer(key, writable_roots(mode, root, temp_roots), compute, own_roots)


def placeholders_of(runner: Runner, protections: Sequence[Protection]) -> list[tuple[str, bool]]:
    """The placeholders `runner` mounts over for these protections: (path, directory)."""
    if not runner.mounts:
        return []
    return [(p.path, p.directory) for p in protections if p.kind == "block"]


def hold_placeholders(wanted: list[tuple[str, bool]]) -> list[int]:
    """Make and hold the placeholders `wanted` (sandbox/placeholders.py), so no other
    stockade process removes one while this sandbox uses it: the fds holding their
    locks. For a caller that may block (`stockade exec`); StaleView when another
    process removed one's directory since the guard looked (`placeholder_attempts`)."""
    if not wanted:
        return []
    from .placeholders import StaleView, hold_all

    try:
        return hold_all(wanted)
    except StaleView:
        raise
    except OSError as error:
        raise SandboxUnavailable(
            f"cannot make or hold the placeholder that keeps {error.filename} protected: "
            f"{error.strerror or error}; remove what stands there, or retry"
        ) from None


class _Attempt:
    """One pass of `placeholder_attempts`: a context that takes StaleView as "again"."""

    __slots__ = ("last", "stale")

    def __init__(self, last: bool) -> None:
        self.last = last
        self.stale = False

    def __enter__(self) -> _Attempt:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        _traceback: TracebackType | None,
    ) -> bool:
        if kind is None:
            return False
        from .placeholders import StaleView

        if not issubclass(kind, StaleView):
            return False
        if self.last:
            raise SandboxUnavailable(
                f"the workspace kept changing while the sandbox was set up "
                f"({getattr(error, 'filename', None)} is gone); retry"
            ) from None
        self.stale = True
        return True


def placeholder_attempts() -> Iterator[_Attempt]:
    """The one placeholder retry, for a synchronous caller and an async one alike:

        for attempt in placeholder_attempts():
            with attempt:
                ...guard the call (or ask the provider), then hold its placeholders...

    A body that meets StaleView (another process removed a placeholder's directory
    between the guard and the hold, so the guard saw a disk that has changed) runs
    again, ATTEMPTS times at most, then SandboxUnavailable; a body that ends well, or
    raises anything else, ends the loop."""
    for number in range(1, ATTEMPTS + 1):
        attempt = _Attempt(last=number == ATTEMPTS)
        yield attempt
        if not attempt.stale:
            return


def refuse_hidden_places(root: str, workdir: str | None, unreadable: Hidden) -> None:
    """Refuse a call whose root or working directory (real paths) lies at or beneath a
    path it hides: the command would start below the cover, where relative names
    reach what the cover hides (the launcher enters its directory again through the
    covers, and fails the call, should one appear in between)."""
    for place, what, error in (
        (root, "workspace root", InvalidPolicy),
        (workdir, "working directory", CommandStartError),
    ):
        if place is None:
            continue
        cover = unreadable.cover_of(place)
        if cover is not None:
            where = "is" if cover == place else f"lies in {cover}, which is"
            raise error(
                f"the {what} {place} {where} hidden from every sandboxed command "
                f"(deny_read); choose a {what} outside it"
            )


def _host_sockets() -> tuple[str, ...]:
    from ._sockets import host_unix_sockets

    return host_unix_sockets()


def _runtime_dirs() -> tuple[str, ...]:
    from ._sockets import runtime_dirs

    return runtime_dirs()


def confine(
    call: Call,
    runner: Runner | None,
    rules: GuardRules,
    *,
    unavailable: str = "no sandbox runner was selected",
    memo: GuardMemo | None = None,
    sockets: Callable[[], tuple[str, ...]] | None = None,
    runtime: Callable[[], tuple[str, ...]] | None = None,
    hold: bool = False,
    new_session: bool = False,
) -> Confined:
    """THE sequence (the module's docstring), for one call on the selected `runner`.

    `unavailable`: why nothing was selected, when `runner` is None. `memo`: the
    provider's guard memo. `sockets`: where the host's named sockets are found (the
    provider's `SocketScan.sockets`; default a fresh scan). `runtime`: where the
    runtime directories are found (default `_sockets.runtime_dirs`, with the caller's
    $XDG_RUNTIME_DIR). `hold`: make and hold the
    placeholders here, retrying when they meet a changed disk (`stockade exec`);
    without it the caller holds `guard.creates` itself. `new_session`: detach the
    command from a terminal the caller keeps (bwrap dialects).

    Raises InvalidPolicy for a root or temp root that is no longer what it was (the
    caller's error, not the sandbox's), else SandboxUnavailable.
    """
    root = resolve_workspace_root(call.root)
    temp_roots = call.temp_roots
    check_temp_roots(temp_roots)
    runner = checked_runner(runner, unavailable)
    mode = call.mode
    if call.network is Network.ALLOWLIST and mode is not SandboxMode.DANGER_FULL_ACCESS:
        refuse_allowlist(runner.backend, call.proxy)
        problem = runner.kind.allowlist_problem(launcher=runner.launcher)
        if problem is not None:
            raise SandboxUnavailable(problem)
    for attempt in placeholder_attempts():
        with attempt:
            guard = judge(runner, mode, root, temp_roots, rules, memo, call.own_roots)
            if guard.refusal is not None:
                raise SandboxUnavailable(guard.refusal)
            held = hold_placeholders(placeholders_of(runner, guard.protections)) if hold else []
    unreadable = None
    grants = None
    if rules.deny_read is not None and mode is not SandboxMode.DANGER_FULL_ACCESS:
        searched = tuple(r for r in (root, *temp_roots) if r not in call.unsearched)
        unreadable = rules.deny_read.expand(
            searched,
            keep=temp_roots,
            readable=call.agent_files,
        )
        refuse_hidden_places(root, call.workdir, unreadable)
        # Covered, or (where nothing can be) read grants around them.
        unreadable, grants = runner.kind.read_grants(
            rules.deny_read, unreadable, writable_roots(mode, root, temp_roots), tier=runner.tier
        )
    # Granted agent sockets at their real paths (the launcher binds without following a
    # link); confined calls only (danger-full-access reaches them where they are).
    agent_sockets: tuple[tuple[str, str], ...] = ()
    if mode is not SandboxMode.DANGER_FULL_ACCESS:
        agent_sockets = tuple((os.path.realpath(host), view) for host, view in call.agent_sockets)
    if unreadable is not None and agent_sockets:
        # A granted socket in a key directory hidden entry by entry stays in sight (the
        # gpg-agent's restricted one: bound over the full one, it is reached by both).
        from ..trust import Hidden

        sources = {host for host, _ in agent_sockets}
        unreadable = Hidden(
            tuple(path for path in unreadable.paths if path not in sources), unreadable.gaps
        )
    tier = runner.tier
    hidden: tuple[str, ...] = ()
    if hides_sockets(
        runner.backend,
        mode,
        call.network,
        launcher=runner.launcher,
        private_ipc=runner.private_ipc,
        agents=bool(agent_sockets),
    ):
        hidden = (sockets or _host_sockets)()
        # The call's own way out, and the agents it is granted (and the sockets their
        # restricted ones are bound over), are never hidden.
        own = {path for pair in agent_sockets for path in pair}
        if call.proxy is not None:
            own.add(os.path.realpath(call.proxy))
        if own:
            hidden = tuple(path for path in hidden if os.path.realpath(path) not in own)
    fresh = NO_FRESH
    proxy = call.proxy if call.network is Network.ALLOWLIST else None
    # Bound at itself inside a fresh directory: only what exists can be.
    keep = (
        *((call.workdir,) if call.workdir is not None else ()),
        *(os.path.realpath(path) for path in call.in_sight if os.path.exists(path)),
    )
    if mode is not SandboxMode.DANGER_FULL_ACCESS and freshens(
        runner.backend, call.network, tier=tier, private_ipc=runner.private_ipc
    ):
        fresh = call_fresh_plan(
            runner.backend,
            call.network,
            root,
            temp_roots,
            fresh_dirs=(runtime or _runtime_dirs)(),
            keep=keep,
            agent_sockets=agent_sockets,
            proxy=proxy,
            launcher=runner.launcher,
            tier=tier,
            private_ipc=runner.private_ipc,
        )
    swapped = agent_swaps(agent_sockets, fresh) if runner.mounts else ()
    bound = {*fresh.agents, *swapped}
    agents = tuple((host, view if (host, view) in bound else host) for host, view in agent_sockets)
    argv = confined_argv(
        runner.backend,
        runner.runner,
        mode,
        root,
        temp_roots,
        call.argv,
        new_session=new_session,
        protections=guard.protections,
        launcher=runner.launcher,
        private_ipc=runner.private_ipc,
        network=call.network,
        hidden_sockets=hidden,
        unreadable=unreadable.paths if unreadable is not None else (),
        proxy=proxy,
        tier=tier,
        grants=grants,
        fresh_dirs=fresh.dirs,
        keep=keep,
        agent_sockets=agent_sockets,
    )
    return Confined(
        argv, root, guard, hidden, held, unreadable, fresh.dirs, agents, runner.kind.TRAITS
    )
