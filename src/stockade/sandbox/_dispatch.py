"""A call on the backend a name selects (backends/): whether it may have network
allowlist, whether its host sockets are covered, its fresh views, its argv. Standard
library only: THE confine sequence (`_confine`) and the reply (`_profiles`) ask here.
"""

from __future__ import annotations

from ..errors import SandboxUnavailable
from ..modes import Network, SandboxMode
from ._argv import NO_FRESH, FreshPlan, Grants, agent_swaps, fresh_plan, may_hide_sockets
from .backends import named

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..trust import Protection


def refuse_allowlist(backend: str, proxy: str | None) -> None:
    """SandboxUnavailable unless `backend` can hold network allowlist with `proxy`: it
    has a bridge to a call's proxy endpoint (`Backend.ALLOWLIST`: bwrap's filter
    stage, the Landlock launcher itself; docs/network.md)."""
    if not named(backend).ALLOWLIST:
        raise SandboxUnavailable(
            f"network allowlist is not enforced on the {backend} backend yet "
            "(docs/network.md); use network off or on"
        )
    if proxy is None:
        raise SandboxUnavailable(
            "network allowlist needs the harness's proxy, and this call has none"
        )


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
    its network confined where Unix sockets stay allowed (`_argv.may_hide_sockets`;
    `agents`: the call is granted agent sockets), on a backend that can
    (`Backend.hides_sockets`: bwrap through its filter stage, `launcher`; the Landlock
    launcher where it can make a mount namespace, `private_ipc`)."""
    return may_hide_sockets(mode, network, agents) and named(backend).hides_sockets(
        launcher=launcher, private_ipc=private_ipc
    )


def freshens(
    backend: str, network: Network, *, tier: str | None = None, private_ipc: bool = True
) -> bool:
    """Whether a call sees the runtime directories (`_sockets.runtime_dirs`: /run,
    /var/run, $XDG_RUNTIME_DIR, /tmp) fresh, empty and read-only: with its network
    confined, on a backend that makes them so (`Backend.freshens`)."""
    return network.confined and named(backend).freshens(tier=tier, private_ipc=private_ipc)


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
    tier: str | None = None,
    private_ipc: bool = True,
) -> FreshPlan:
    """One call's fresh views (`_argv.fresh_plan`) where its backend makes them
    (`freshens`), keeping its root, temp roots, `keep` (the working directory), its
    proxy socket (allowlist) and what the backend runs inside (`Backend.in_sight`)
    in sight; else none."""
    if not fresh_dirs or not freshens(backend, network, tier=tier, private_ipc=private_ipc):
        return NO_FRESH
    kept = [root, *temp_roots, *keep]
    if proxy is not None and network is Network.ALLOWLIST:
        kept.append(proxy)
    kept += named(backend).in_sight(launcher=launcher)
    return fresh_plan(fresh_dirs, kept, agent_sockets)


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
    tier: str | None = None,
    grants: Grants | None = None,
    fresh_dirs: Sequence[str] = (),
    keep: Sequence[str] = (),
    agent_sockets: Sequence[tuple[str, str]] = (),
) -> tuple[str, ...]:
    """The argv to spawn instead of `argv`, for the selected backend and runner
    (`Backend.argv`; ValueError for a backend no module is).

    `launcher` is bwrap's filter stage (not an operator's runner_command: what it can
    see inside is its own business); `private_ipc` and `tier` are the Landlock
    launcher's (its plain tier cannot bind the protections: the guard claims `partial`
    for them; `grants`: its read grants there, `Backend.read_grants`). `network` is
    the call's effective value; `hidden_sockets` the host's named Unix sockets found
    for it (`_sockets.host_unix_sockets`, where `hides_sockets`); `unreadable` the
    deny_read paths that exist (`trust.secrets.DenyRead.expand`).

    `fresh_dirs`: the runtime directories found (`_sockets.runtime_dirs`), made fresh
    where the backend can (`freshens`), keeping the root, the temp roots, the proxy
    and `keep` (the working directory) in sight. `agent_sockets`: (host socket, path
    in the command's view), each bound at its view path inside a fresh directory
    (`fresh_plan` says which were; the others stay at their host path, never hidden),
    and with any, read-only keeps named sockets (`_argv.pairs_only`).
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
    return named(backend).argv(
        runner,
        mode,
        root,
        temp_roots,
        argv,
        new_session=new_session,
        protections=protections,
        launcher=launcher,
        private_ipc=private_ipc,
        network=network,
        hidden_sockets=hidden_sockets,
        unreadable=unreadable,
        proxy=proxy,
        tier=tier,
        grants=grants,
        fresh=plan,
        agents=bool(agent_sockets),
        swaps=agent_swaps(agent_sockets, plan),
    )
