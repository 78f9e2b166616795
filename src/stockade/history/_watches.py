"""The watches of one root (which watch stands for which paths) and what a batch of
inotify events nominates: paths to look at again and subtrees to walk again.

Events only nominate; the tracker then looks at the tree itself, so an event that
names a stale path costs a look, never a wrong record. What must hold is the other
direction: every change nominates the path it changed or a directory above it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import attrs

from ..reprs import fields_repr
from ._inotify import (
    IN_ATTRIB,
    IN_CREATE,
    IN_DELETE,
    IN_DELETE_SELF,
    IN_IGNORED,
    IN_ISDIR,
    IN_MOVE_SELF,
    IN_MOVED_FROM,
    IN_MOVED_TO,
    IN_Q_OVERFLOW,
    IN_UNMOUNT,
    RawEvent,
)
from ._model import is_under

_DIRECTORY_COMES_OR_GOES = IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE
_SELF_GONE = IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT


@attrs.define
class Nominations:
    """What a batch of events asks the tracker to look at again."""

    __repr__ = fields_repr

    paths: set[str] = attrs.field(factory=set)
    subtrees: set[str] = attrs.field(factory=set)
    overflow: bool = False
    root_moved: bool = False
    crowded: bool = False  # more paths than the bound: one full look instead

    def __bool__(self) -> bool:
        return bool(self.paths or self.subtrees or self.overflow or self.root_moved or self.crowded)

    @property
    def whole(self) -> bool:
        """Only a full look answers these (the names, if any, are not needed)."""
        return self.overflow or self.root_moved or self.crowded

    def merge(self, other: Nominations, limit: int | None = None) -> None:
        """Add `other`'s; past `limit` paths, keep none of them and ask for a full look."""
        self.overflow |= other.overflow
        self.root_moved |= other.root_moved
        self.crowded |= other.crowded
        if self.whole:
            self.paths, self.subtrees = set(), set()
            return
        self.paths |= other.paths
        self.subtrees |= other.subtrees
        if limit is not None and len(self.paths) + len(self.subtrees) > limit:
            self.paths, self.subtrees, self.crowded = set(), set(), True

    def outermost_subtrees(self) -> list[str]:
        """The subtrees, none inside another (walking the outer one covers it)."""
        kept: list[str] = []
        for path in sorted(self.subtrees, key=lambda p: (p.count("/"), p)):
            if not any(path == outer or is_under(path, outer) for outer in kept):
                kept.append(path)
        return kept


def _join(directory: str, name: bytes) -> str:
    decoded = os.fsdecode(name)
    return f"{directory}/{decoded}" if directory else decoded


@attrs.define
class Watches:
    """wd -> the paths it stands for (a directory's path; a file's names in the root,
    several when it is hard-linked), and path -> wd. Tuples, not sets: one is almost
    always one path, and a set per file was the largest part of a big tree's memory."""

    __repr__ = fields_repr

    directories: dict[int, tuple[str, ...]] = attrs.field(factory=dict)
    files: dict[int, tuple[str, ...]] = attrs.field(factory=dict)
    shared: set[int] = attrs.field(factory=set)
    of_path: dict[str, int] = attrs.field(factory=dict)

    def __len__(self) -> int:
        return len(self.directories) + len(self.files)

    def add(self, path: str, wd: int, *, directory: bool) -> int | None:
        """`path` now stands for `wd`; the wd it stood for before when no path stands for
        that one any more (the caller removes that watch)."""
        if self.of_path.get(path) == wd:
            return None
        freed = self.forget(path)
        table = self.directories if directory else self.files
        table[wd] = (*table.get(wd, ()), path)
        self.of_path[path] = wd
        return freed if freed != wd else None

    def forget(self, path: str) -> int | None:
        """Stop `path` from standing for its watch; the wd when no path stands for it now
        (the caller removes that watch)."""
        wd = self.of_path.pop(path, None)
        if wd is None:
            return None
        for table in (self.directories, self.files):
            paths = table.get(wd)
            if paths is not None:
                kept = tuple(p for p in paths if p != path)
                if kept:
                    table[wd] = kept
                    return None
                del table[wd]
                self.shared.discard(wd)
                return wd
        return None

    def nominate(self, events: Iterable[RawEvent]) -> Nominations:
        found = Nominations()
        for wd, mask, _cookie, name in events:
            if mask & IN_Q_OVERFLOW:
                found.overflow = True
                continue
            if wd in self.directories:
                directories = self.directories[wd]
                if mask & IN_IGNORED:
                    self._drop(wd, directories)
                elif name:
                    for directory in directories:
                        path = _join(directory, name)
                        if mask & IN_ISDIR and mask & _DIRECTORY_COMES_OR_GOES:
                            found.subtrees.add(path)
                        else:
                            found.paths.add(path)
                elif mask & _SELF_GONE:
                    for directory in directories:
                        if directory:
                            found.subtrees.add(directory)
                        else:
                            found.root_moved = True
                elif mask & IN_ATTRIB:
                    found.paths.update(d for d in directories if d)
            elif wd in self.files:
                if mask & IN_IGNORED:
                    self._drop(wd, self.files[wd])
                else:
                    found.paths.update(self.files[wd])
            # Any other wd was removed on purpose: its paths left the root.
        return found

    def _drop(self, wd: int, paths: tuple[str, ...]) -> None:
        for path in paths:
            if self.of_path.get(path) == wd:
                del self.of_path[path]
        self.directories.pop(wd, None)
        self.files.pop(wd, None)
        self.shared.discard(wd)
