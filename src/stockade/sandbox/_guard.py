"""The trust base applied to one confined call: what its backend must keep read-only
inside the writable roots, what it cannot protect (claimed partial), what it refuses.

Reads the disk (lstat, realpath, a `.git` file) but no trio: `stockade exec` uses it too.
"""

from __future__ import annotations

import os
from collections import namedtuple

from ..modes import SandboxMode
from ..trust import (
    INSTALL_FIX,
    PathFacts,
    host_temp_roots,
    is_under,
    protected_set,
    protections,
    relinkable,
    startup_files,
)
from ._argv import writable_roots
from .backends import known

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from collections.abc import Sequence


class Guard(
    namedtuple("Guard", "protections gaps refusal creates new_repository", defaults=((), None))
):
    """protections (tuple[Protection, ...]) for the argv builder; gaps (tuple[str, ...]):
    what stays unenforced, making the claim partial; refusal (str | None): why the call
    must not run at all; creates (tuple[str, ...]): the placeholders the runner mounts
    over (made if missing), for the executor to hold while in use and remove after;
    new_repository (str | None): the workspace root (its real path) when it had no
    repository (`.git` missing or an empty directory) as the guard looked: its `.git`
    is left unblocked, and what git would run of one made there is held when the
    call ends (trust/new_repository.py: the executor, `stockade exec`)."""

    __slots__ = ()


NO_GUARD = Guard((), (), None)


def _relative(path: str, roots: Sequence[str]) -> str:
    for root in sorted(roots, key=len, reverse=True):
        if is_under(path, root) and path != root:
            return os.path.relpath(path, root)
    return path


def _prefixes_inside(path: str, roots: Sequence[str]) -> list[str]:
    """`path` and its parents that lie strictly inside one of `roots` and are no root
    themselves (a workspace inside a temp root is never a placeholder, empty or not)."""
    found = []
    current = os.path.normpath(path)
    while (
        current != "/"
        and current not in roots
        and any(is_under(current, r) and current != r for r in roots)
    ):
        found.append(current)
        current = os.path.dirname(current)
    return found


def runner_refusal(
    runner: str | None,
    roots: Sequence[str],
    installation: Sequence[str],
    *,
    facts: PathFacts | None = None,
) -> str | None:
    """Why `runner` must not run: it lies in one of `roots` and is not part of
    stockade's installation (which every bwrap call protects and the Landlock launcher
    refuses to run beside), or None. Calls made without this composition (another
    backend, another config) could replace it."""
    if not runner:
        return None
    facts = facts or PathFacts()
    real = facts.realpath(runner)
    where = next((r for r in roots if is_under(real, facts.realpath(r))), None)
    if where is None or any(is_under(real, facts.realpath(p)) for p in installation):
        return None
    return (
        f"the sandbox runner {runner} lies inside the writable root {where}, where a "
        "confined command could replace it; use a runner outside every workspace and "
        "temp directory"
    )


def _relinkable_installation(
    links: Sequence[str], held: Sequence[str], real_roots: Sequence[str]
) -> tuple[str, str] | None:
    """The first of `links` (real directories joined with a name) that lies in one of
    `real_roots` and not inside a path of `held` (the installation's paths the call
    binds read-only), with that root; None when none does."""
    for link in links:
        where = next((r for r in real_roots if is_under(os.path.dirname(link), r)), None)
        if where is not None and not any(is_under(link, path) for path in held):
            return link, where
    return None


def _relinked_refusal(link: str, where: str) -> str:
    return (
        f"stockade was started through the symlink {link}, inside the writable root "
        f"{where}: a workspace-write command could re-point it, and the next stockade "
        "process started that way would run what the command chose; start stockade by "
        f"a path with no link inside a writable root (that link leads to "
        f"{os.path.realpath(link)}), or keep its interpreter and venv outside the "
        "workspace (or set allow_unprotected_installation: true in the "
        "stockade.sandbox.local entry to accept a partial claim)"
    )


def guard_call(
    backend: str,
    mode: SandboxMode,
    root: str,
    temp_roots: Sequence[str],
    *,
    mounts: bool = False,
    runner: str | None = None,
    extra_protected: Sequence[str] = (),
    trusted_files: Sequence[str] = (),
    installation: Sequence[str] = (),
    allow_unprotected_installation: bool = False,
    startup: Sequence[tuple[str, str]] | None = None,
    facts: PathFacts | None = None,
    own_roots: Sequence[str] = (),
    installation_links: Sequence[str] = (),
) -> Guard:
    """What `backend` must do so that nothing trusted later is writable in this call.

    `mounts`: it binds protected paths in a mount namespace of the call's own (bwrap's
    dialects do anyway; the Landlock launcher in its namespaced tier).

    `extra_protected`: the composition's `protected_paths` (`!NAME` drops a default).
    `startup`: the caller's startup files (trust.startup_files(), read now when None).
    `facts`: where the disk is read (a fresh PathFacts when not given); afterwards it
    tells what was looked at (the provider's memo).
    `own_roots`: temp roots of stockade's own that no unconfined tool works in (the
    default tool cache directory, `stockade exec`'s private temp directory): no names
    are protected in them (`protect.protected_set`'s `names`); never the workspace
    root.
    `installation_links`: the links on the way to the installation
    (trust.installation_links()): one inside a writable root, and not inside the
    installation (kept read-only), refuses the call.
    """
    # One call resolves the same roots and prefixes for every path: each lstat once.
    facts = facts or PathFacts()
    # A runner about to be executed must be out of reach of every call that could
    # run before it (any mode: a session can always be widened to workspace-write;
    # the host's temp roots too: another composition may restore them).
    reachable = writable_roots(SandboxMode.WORKSPACE_WRITE, root, (*temp_roots, *host_temp_roots()))
    problem = runner_refusal(runner, reachable, installation, facts=facts)
    if problem is not None:
        return Guard((), (), problem)
    roots = writable_roots(mode, root, temp_roots)
    if not roots:
        return NO_GUARD  # read-only: nothing is writable, everything holds
    real_roots = [facts.realpath(path) for path in roots]
    real_own = {facts.realpath(path) for path in own_roots}

    def inside(path: str) -> str | None:
        real = facts.realpath(path)
        return next((r for r in real_roots if is_under(real, r)), None)

    startup = startup_files() if startup is None else startup
    metadata: list[str] = []
    unknown: list[str] = []
    new_repository: str | None = None
    for writable, real in zip(roots, real_roots, strict=True):
        # Nested repositories in the workspace root only: below a temp root they are
        # what other processes make and remove (a bind to one gone fails the call).
        nested = writable == roots[0]
        found = protected_set(
            writable,
            extra_protected,
            startup=startup,
            nested=nested,
            within=real_roots,
            facts=facts,
            # The workspace root's new repository is held when the call ends (the
            # executor: trust/new_repository.py), not blocked; other roots' are.
            new_repository=nested,
            # Only confined commands ever work in a root of stockade's own (no
            # unconfined tool is pointed at it), and a name one level down was never
            # protected in a temp root: its names would hold nothing back.
            names=nested or real not in real_own,
        )
        metadata += found.paths
        unknown += found.unknown
        if found.open_dotgit is not None:
            new_repository = facts.realpath(writable)
    # What this call knows it cannot hold: repositories nested too deep or past the
    # scan's budget (trust._GitWalk). A repository made during the call is a standing
    # limit of every backend (trust.NEW_REPOSITORY_GAP): `probe` and the docs say it.
    repository_gaps = []
    if unknown:
        repository_gaps.append("git metadata not looked for: " + "; ".join(unknown))
    # Real paths already (trust.installation_paths), resolved when the process began:
    # only a path outside every root could re-point them, out of a command's reach.
    own = [path for path in installation if any(is_under(path, r) for r in real_roots)]
    files = [path for path in trusted_files if inside(path)]

    kind = known(backend)
    binding = (kind is not None and kind.PROTECTS) or mounts
    # But the way there as written (a venv reached through a link in the workspace):
    # a link a command could re-point for the next stockade process, or this one's
    # next import, which no bind holds (it would hold where the link leads). Only one
    # inside a part of the installation this call binds read-only is held.
    held = own if binding else []
    relinked = _relinkable_installation(installation_links, held, real_roots)
    if relinked is not None:
        relinked_path, link_root = relinked
        if not allow_unprotected_installation and (binding or not own):
            return Guard((), (), _relinked_refusal(relinked_path, link_root))
        # (Where nothing binds and the installation lies in the root, that is refused
        # below in its own words.)
        repository_gaps.append(f"stockade was started through the link {relinked_path}")

    # A backend that binds (or denies) protected paths inside a writable grant.
    if binding:
        # A path whose real path is itself has no link on its way (the common case).
        maybe_linked = [p for p in metadata if facts.realpath(os.path.normpath(p)) != p.rstrip("/")]
        links = sorted(
            {link for p in maybe_linked if (link := relinkable(p, roots, facts=facts)) is not None}
        )
        protecting_gaps = tuple(
            f"{link} is a symlink inside a writable root: what it protects can be re-pointed"
            for link in links
        ) + tuple(repository_gaps)
        # An empty directory or file standing at a protected path (or a directory on
        # its way) is a placeholder an earlier runner left (a `stockade exec` killed
        # before it cleaned up): block it again rather than nest new ones inside it.
        placeholders = {
            prefix for path in metadata for prefix in _prefixes_inside(path, real_roots)
        }
        binds = protections((*metadata, *own, *files), roots, placeholders, facts=facts)
        # Every placeholder the runner mounts over: held by each process whose sandbox
        # uses it and removed by the last (sandbox/placeholders.py), so one process
        # never pulls a placeholder out from under another's sandbox.
        creates = tuple(p.path for p in binds if p.kind == "block")
        return Guard(binds, protecting_gaps, None, creates, new_repository)
    if kind is None:
        return NO_GUARD

    # This backend (the Landlock launcher's plain tier) cannot carve a read-only hole
    # out of a writable grant.
    if files:
        where = inside(files[0])
        return Guard(
            (),
            (),
            f"the composition file {files[0]} lies inside the writable root {where}, "
            "where a workspace-write command could rewrite it and the Landlock launcher "
            "cannot keep it read-only; keep stockade.yml outside the workspace and the "
            "temp directories",
        )
    gaps: list[str] = []
    if own:
        where = inside(own[0])
        if not allow_unprotected_installation:
            return Guard(
                (),
                (),
                f"stockade's installation ({own[0]}) lies inside the writable root {where}: "
                "a workspace-write command could change what the next stockade process "
                "runs, and the Landlock launcher cannot keep it read-only; "
                f"{INSTALL_FIX} (or set allow_unprotected_installation: true in the "
                "stockade.sandbox.local entry to accept a partial claim)",
            )
        gaps.append(f"stockade's installation under {where} is not protected")
    # Only what lies (or would be created) inside a writable root is unprotected.
    exposed = [path for path in metadata if inside(path) or inside(os.path.dirname(path))]
    shown = sorted({_relative(path, real_roots) for path in exposed})
    gaps.append("protected paths not enforced: " + ", ".join(shown))
    return Guard((), (*gaps, *repository_gaps), None, (), new_repository)
