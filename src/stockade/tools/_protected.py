"""Protected paths inside writable roots: the fence refuses writes that land on them.

Repository metadata and configuration that run later OUTSIDE any sandbox (every
repository's hooks, config, config.worktree and commondir, `stockade.yml`, editor and
agent settings, the caller's startup files in a root that holds them;
`stockade.trust.protected_paths`) are not writable through the fs tools in a fenced
mode, even inside a writable root. Everything is compared by real path: where the
write really lands against where each protected path really is (its existing part
resolved, the missing rest kept as named).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from ..trust import PathFacts, is_under, protected_paths, startup_files

WHY: str = "repository metadata / configuration that runs later outside the sandbox"


def real_protected(roots: Sequence[str], extra: Sequence[str] = ()) -> tuple[str, ...]:
    """The protected paths of every root in `roots` (the workspace root first, as
    writable_roots gives them: the one searched for nested repositories), each as a
    real, normalised path (`extra`: the composition's `protected_paths`, where `!NAME`
    drops a default)."""
    found: dict[str, None] = {}
    startup, facts = startup_files(), PathFacts()
    within = [facts.realpath(root) for root in roots]
    for index, root in enumerate(roots):
        for path in protected_paths(
            root, extra, startup=startup, nested=index == 0, within=within, facts=facts
        ):
            found[facts.realpath(os.path.normpath(path))] = None
    return tuple(found)


def hit(location: str, protected: Sequence[str]) -> str | None:
    """The protected path a write at the real `location` would touch, or None.

    Touching is being the protected path, lying beneath it, or being one of its
    ancestors that is not a directory: a file written there (a `.git` file naming
    another gitdir, a file where a missing `.git` or `.git/hooks` would go) changes
    what the protected path means. (Writing over a directory fails anyway.)
    """
    location = os.path.normpath(location)
    for path in protected:
        if is_under(location, path):
            return path
        if is_under(path, location) and not os.path.isdir(location):
            return path
    return None


def refusal(path: str) -> str:
    return f"{path} is protected ({WHY})"


def dir_location(dir_fd: int) -> str | None:
    """Where the open directory `dir_fd` really is now, or None when it cannot be told."""
    if sys.platform.startswith("linux"):
        try:
            where = os.readlink(f"/proc/self/fd/{dir_fd}")
        except OSError:
            return None
        return where if where.startswith("/") and not where.endswith(" (deleted)") else None
    try:
        import fcntl

        getpath = getattr(fcntl, "F_GETPATH", None)
        if getpath is None:
            return None
        raw = fcntl.fcntl(dir_fd, getpath, bytes(1024))
    except OSError:
        return None
    where = os.fsdecode(raw.split(b"\0", 1)[0])
    return where if where.startswith("/") else None
