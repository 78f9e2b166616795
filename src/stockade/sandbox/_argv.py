"""What every backend's argv is made of, standard library only: the writable roots,
the fresh views of a call, the launcher's covering options, the package's placeholder
files. Each backend's own argv is built in its module (backends/); `stockade exec`
builds its argv with these and nothing else.
"""

from __future__ import annotations

import os

from ..modes import Network, SandboxMode

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..trust import Protection


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


def may_hide_sockets(mode: SandboxMode, network: Network, agents: bool = False) -> bool:
    """Whether a call may have the host's named Unix sockets covered at all, on a
    backend that can (`Backend.hides_sockets`): with its network confined, where Unix
    sockets stay allowed (not `pairs_only`)."""
    return network is not Network.ON and not pairs_only(mode, network, agents)


def under(path: str, top: str) -> bool:
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
            if path != top and under(path, top):
                return top
        return None

    def hides(self, path: str) -> bool:
        """Whether `path` is out of the command's sight: beneath a fresh directory and
        beneath nothing kept."""
        return self.fresh_of(path) is not None and not any(under(path, k) for k in self.keeps)


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
    fresh = tuple(d for d in dirs if not any(under(d, k) for k in keep))
    plan = FreshPlan(fresh)
    kept = [k for k in dict.fromkeys(keep) if plan.fresh_of(k) is not None]
    plan.keeps = tuple(k for k in kept if not any(o != k and under(k, o) for o in kept))
    plan.agents = tuple(
        (source, view)
        for source, view in agent_sockets
        if plan.fresh_of(view) is not None and not any(under(view, k) for k in keep)
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


def unreadable_args(paths: Sequence[str]) -> list[str]:
    """The launcher's options covering each deny_read path (`--deny-read`)."""
    args: list[str] = []
    for path in paths:
        args += ["--deny-read", path]
    return args


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


def launcher_protection_args(protection: Protection) -> list[str]:
    """The launcher's options for one protected path (its namespaced tier, and its
    filter stage under bwrap), as bwrap's `protection_args` gives bwrap's."""
    path = protection.path
    if protection.kind == "pin":
        return ["--bind-pin", path]
    if protection.kind == "read-only":
        return ["--bind-ro", path]
    if protection.directory:
        return ["--empty-dir", path]
    return ["--bind-file", placeholder_source(path), path]


class Grants:
    """Read access in the plain tier, where nothing can be covered: reads (tuple[str,
    ...]: read and execute beneath each), lists (tuple[str, ...]: list each directory
    and every one beneath it, read no file there)."""

    __slots__ = ("lists", "reads")

    def __init__(self, reads: tuple[str, ...], lists: tuple[str, ...]) -> None:
        self.reads, self.lists = reads, lists
