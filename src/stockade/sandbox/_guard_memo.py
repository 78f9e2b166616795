"""The provider's memo of guard answers: the same call on an unchanged disk gets the
same answer without reading every protected path again.

An answer is kept with what its guard call saw of the disk inside the writable roots:
each path's inode, type, ctime and size (or its absence). It is given again only when
every one of those paths still looks exactly so: any entry made, removed, renamed or
re-pointed changes its directory's ctime, any write changes the file's, and user
space cannot set a ctime back. A file read (a `.git` file, a commondir) or a directory
listed (the search for repositories) was looked at first, so what it held is watched
the same way; one read outside every root (a worktree's gitdir elsewhere) is watched
too, and then every other path looked at outside by what it is. Not kept: an answer
whose reads left the memo (a link followed), or one that saw a change younger than
SETTLE_NS, which a coarse kernel clock could give the same ctime as a change right
after it.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from typing import Any

import attrs

from ..trust import PathFacts, is_under
from ._guard import Guard

# A change this recent may share its ctime with the next one (coarse timestamps tick
# every 1-10 ms): an answer that saw one is recomputed next time.
SETTLE_NS = 50_000_000
# Distinct calls remembered (roots, modes, backends): enough for many sessions.
CAPACITY = 256

Identity = tuple[int, int, int, int, int] | None
Fingerprint = tuple[tuple[str, Identity], ...]


def _identity(info: os.stat_result | None) -> Identity:
    if info is None:
        return None
    return (info.st_dev, info.st_ino, info.st_mode, info.st_ctime_ns, info.st_size)


def _kind(info: os.stat_result | None) -> Identity:
    """What a path is, not when it last changed: (device, inode, type), -1, -1."""
    if info is None:
        return None
    return (info.st_dev, info.st_ino, stat.S_IFMT(info.st_mode), -1, -1)


def _now_identity(path: str, seen: Identity) -> Identity:
    try:
        info = os.lstat(path)
    except (OSError, ValueError):
        return None
    return _kind(info) if seen is not None and seen[3] == -1 else _identity(info)


@attrs.define(eq=False, repr=False)
class GuardMemo:
    """`answer(key, roots, compute)`: compute(facts) once, then reuse while unchanged.
    `own_roots`: those of `roots` whose repositories the guard does not look for
    (`guard_call`'s `own_roots`)."""

    _entries: dict[Any, tuple[Guard, Fingerprint]] = attrs.field(factory=dict)
    hits: int = 0

    def answer(
        self,
        key: Any,
        roots: tuple[str, ...],
        compute: Callable[[PathFacts], Guard],
        own_roots: tuple[str, ...] = (),
    ) -> Guard:
        fingerprint: Fingerprint | None
        kept = self._entries.get(key)
        if kept is not None:
            guard, fingerprint = kept
            if all(_now_identity(path, seen) == seen for path, seen in fingerprint):
                self.hits += 1
                return guard
            del self._entries[key]
        began = time.time_ns()
        facts = PathFacts()
        guard = compute(facts)
        fingerprint = _fingerprint(facts, roots, began, own_roots)
        if fingerprint is not None:
            if len(self._entries) >= CAPACITY:
                self._entries.pop(next(iter(self._entries)))
            self._entries[key] = (guard, fingerprint)
        return guard


def _fingerprint(
    facts: PathFacts, roots: tuple[str, ...], began: int, own_roots: tuple[str, ...] = ()
) -> Fingerprint | None:
    """What the guard saw, or None when it cannot be trusted to stay the answer."""
    if facts.went_elsewhere:
        return None
    seen = facts.seen
    # Each root's `.git` looked at: the guard got as far as its repositories (in every
    # root where it looks for them; what it looked up in the others is watched all the
    # same).
    if any(os.path.join(root, ".git") not in seen for root in roots if root not in own_roots):
        return None

    def inside(path: str) -> bool:
        return any(is_under(path, root) for root in roots)

    read = set(facts.read)
    # What lies outside every writable root no confined command can change, and the
    # provider checks on each call what would matter there (the root's real path, the
    # runner's identity): only what is beneath the roots is watched, and a root itself
    # only when its entries were listed (an entry made in it then changes it): each
    # path looked up in a temp root is watched on its own, not every file made there.
    watched = {
        path: info
        for path, info in seen.items()
        if inside(path) and (path not in roots or path in read)
    }
    # Unless the guard read (or looked for) a file outside them: a `.git` file naming a
    # gitdir elsewhere, that gitdir's commondir. Then what it read is watched too, and
    # every other path looked at outside by what it is (device, inode, type): a real
    # path found through them changes only when one is replaced (by a link, say), while
    # their times change with every git command run there.
    outside_read = [path for path in read if not inside(path)]
    kinds: list[tuple[str, Identity]] = []
    if outside_read:
        watched.update((path, seen[path]) for path in outside_read)
        kinds = [(path, _kind(info)) for path, info in seen.items() if path not in watched]
    if any(info is not None and info.st_ctime_ns > began - SETTLE_NS for info in watched.values()):
        return None
    return (*((path, _identity(info)) for path, info in watched.items()), *kinds)
