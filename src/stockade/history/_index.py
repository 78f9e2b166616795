"""The tree as the history last saw it: each path's entry, the stat identity it was read
under and when, and each directory's children, so a subtree is walked, not searched."""

from __future__ import annotations

import os
import stat
import struct
from collections.abc import Iterator

import attrs

from ..reprs import fields_repr
from ._model import Entry, parent_of

# Under this many nanoseconds between a file's ctime and the moment its content was
# read, an equal stat identity proves nothing: a write in the same clock tick (ext4's
# coarse clock, or a whole second on small inodes) leaves the times as they were, so
# such a file is read again (git's "racily clean" entries).
RACY_NS = 2_000_000_000

# dev, ino, size, mtime_ns, ctime_ns, st_mode, packed: one small bytes object per path
# (a tuple of six large ints was a fifth of a big tree's index).
_KEY = struct.Struct("<QQqqqI")
StatKey = bytes


def stat_key(st: os.stat_result) -> StatKey:
    return _KEY.pack(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)


def ctime_of(key: StatKey) -> int:
    return int(_KEY.unpack(key)[4])


def stamp_of(st: os.stat_result) -> str:
    """An unrecorded file's identity: it compares equal while the file is untouched."""
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


@attrs.frozen
class Known:
    """One path's entry, the stat identity it was read under, and when it was read."""

    __repr__ = fields_repr

    entry: Entry
    key: StatKey | None = None
    checked_ns: int = 0

    def still(self, st: os.stat_result) -> bool:
        """True when `st` proves the entry still holds (same identity, not racy)."""
        if self.key is None or stat_key(st) != self.key:
            return False
        if stat.S_ISDIR(st.st_mode) or stat.S_ISLNK(st.st_mode):
            return True
        return ctime_of(self.key) + RACY_NS < self.checked_ns


@attrs.define
class Index:
    """Path -> Known, with each directory's child names ("" is the root)."""

    __repr__ = fields_repr

    entries: dict[str, Known] = attrs.field(factory=dict)
    children: dict[str, set[str]] = attrs.field(factory=lambda: {"": set()})

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, path: str) -> Known | None:
        return self.entries.get(path)

    def entry(self, path: str) -> Entry | None:
        known = self.entries.get(path)
        return known.entry if known is not None else None

    def set(self, path: str, known: Known) -> None:
        """Record `path`; a path that stops being a directory loses its subtree."""
        old = self.entries.get(path)
        if old is not None and old.entry.kind == "dir" and known.entry.kind != "dir":
            for inner in list(self.below(path)):
                self.entries.pop(inner, None)
            self.children.pop(path, None)
        self.entries[path] = known
        self.children.setdefault(parent_of(path), set()).add(path.rpartition("/")[2])
        if known.entry.kind == "dir":
            self.children.setdefault(path, set())

    def remove(self, path: str) -> list[str]:
        """Forget `path` and everything below it; the paths forgotten."""
        gone = [path, *self.below(path)] if path in self.entries else []
        for inner in gone:
            self.entries.pop(inner, None)
            self.children.pop(inner, None)
        siblings = self.children.get(parent_of(path))
        if siblings is not None:
            siblings.discard(path.rpartition("/")[2])
        return gone

    def below(self, directory: str) -> Iterator[str]:
        """Every recorded path strictly inside `directory`, parents before children."""
        stack = [directory]
        while stack:
            current = stack.pop()
            for name in self.children.get(current, ()):
                path = f"{current}/{name}" if current else name
                if path in self.entries:
                    yield path
                    if path in self.children:
                        stack.append(path)
