"""What the history knows of a tree: an entry per path (file, directory, symlink, other)
and a change (each changed path's state before and after), with the digest of a tree.

Paths are relative to the root, '/'-separated, the root itself "" (never recorded); a
name that is not UTF-8 is held as the OS gives it (surrogate escapes) and shown escaped.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Literal

import attrs
import msgspec

from ..reprs import fields_repr

Kind = Literal["file", "dir", "link", "other"]

# Why a file's content is not in the store (it is then never written back).
OVER_BUDGET = "over the size budget"
UNREADABLE = "unreadable"
CHANGING = "changing while it was read"
NOT_REGULAR = "not a regular file"
SPENT = "past the byte budget of one look (bytes_budget)"
NO_ROOM = "no room for it on the snapshot store's filesystem"


class Entry(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """One path's state. Two entries are equal exactly when the path holds the same
    thing: same kind, permission bits, content digest or link target.

    `digest` is the SHA-256 of a file's content when the store holds it; a file whose
    content is not recorded has `digest` None, `unrecorded` saying why and `stamp` (its
    inode, size and times) so that two sightings of it still compare.
    """

    kind: Kind
    mode: int = 0
    size: int = 0
    digest: str | None = None
    target: bytes | None = None
    unrecorded: str | None = None
    stamp: str | None = None

    @property
    def recorded(self) -> bool:
        """True when the history can put this state back."""
        return self.kind != "other" and (self.kind != "file" or self.digest is not None)


Pair = tuple[Entry | None, Entry | None]


def shown(path: str) -> str:
    """`path` as text any log or terminal can hold (bytes that are not UTF-8 escaped)."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def parent_of(path: str) -> str:
    return path.rpartition("/")[0]


def is_under(path: str, directory: str) -> bool:
    """True when `path` lies strictly inside `directory` ("" is the root)."""
    return path.startswith(directory + "/") if directory else bool(path)


def depth(path: str) -> int:
    return path.count("/") + 1 if path else 0


def tree_order(path: str) -> list[str]:
    """A sort key: a directory, then everything inside it, then its next sibling."""
    return path.split("/")


@attrs.frozen
class Change:
    """What changed between two moments: every path whose state differs, with both states.

    `method` says how it was found ("watch": the kernel's events for the paths they
    named; "scan": every path compared), `rescanned` why a full comparison was made in
    a watched root (an event queue overflow, a moved root, ignore rules edited), and
    `concurrent` that another window was open at the same time (anything running in
    the root then counts here too). `manifest` names the full list in the store.
    """

    __repr__ = fields_repr

    items: Mapping[str, Pair] = attrs.field(factory=dict)
    method: str = "watch"
    rescanned: str | None = None
    concurrent: bool = False
    manifest: str | None = None

    def __bool__(self) -> bool:
        return bool(self.items)

    @property
    def created(self) -> list[str]:
        return sorted(p for p, (before, _) in self.items.items() if before is None)

    @property
    def deleted(self) -> list[str]:
        return sorted(p for p, (_, after) in self.items.items() if after is None)

    @property
    def modified(self) -> list[str]:
        return sorted(p for p, (b, a) in self.items.items() if b is not None and a is not None)

    @property
    def unrecorded(self) -> list[str]:
        """Paths whose new state the store cannot give back (over the budget, unreadable,
        not a regular file): an undo of a later change cannot bring them back."""
        return sorted(
            p for p, (_, after) in self.items.items() if after is not None and not after.recorded
        )

    @property
    def unrecorded_why(self) -> tuple[str, ...]:
        """Why the `unrecorded` paths are not recorded, each reason once."""
        reasons = {
            after.unrecorded or NOT_REGULAR
            for _, after in self.items.values()
            if after is not None and not after.recorded
        }
        return tuple(sorted(reasons))


def differences(
    before: Mapping[str, Entry | None], now: Mapping[str, Entry | None]
) -> dict[str, Pair]:
    """For each path of `before` (its state at the start), the pair when it differs now."""
    changed: dict[str, Pair] = {}
    for path, old in before.items():
        new = now.get(path)
        if old != new:
            changed[path] = (old, new)
    return changed


def compose(first: Mapping[str, Pair], second: Mapping[str, Pair]) -> dict[str, Pair]:
    """Two successive changes as one: each path from its first state to its last, left
    out where it ended as it began."""
    out = dict(first)
    for path, (before, after) in second.items():
        if path in out:
            start = out[path][0]
            if start == after:
                del out[path]
            else:
                out[path] = (start, after)
        else:
            out[path] = (before, after)
    return out


def _entry_bytes(entry: Entry) -> bytes:
    if entry.kind == "file":
        content = (entry.digest or f"unrecorded:{entry.stamp}").encode()
    elif entry.kind == "link":
        content = entry.target or b""
    else:
        content = b""
    return b"%s\0%o\0%s" % (entry.kind.encode(), entry.mode, content)


def tree_digest(entries: Iterable[tuple[str, Entry]]) -> str:
    """One SHA-256 over a whole tree's entries (path, kind, mode, content or target):
    equal exactly when two trees hold the same things."""
    hasher = hashlib.sha256()
    for path, entry in sorted(entries, key=lambda item: os.fsencode(item[0])):
        hasher.update(os.fsencode(path) + b"\0" + _entry_bytes(entry) + b"\n")
    return hasher.hexdigest()


# --- the manifest: a change's full list, as the store keeps it ----------------------------


class _Manifest(msgspec.Struct, array_like=True, gc=False):
    paths: list[bytes]
    before: list[Entry | None]
    after: list[Entry | None]


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(_Manifest)


def encode_manifest(items: Mapping[str, Pair]) -> bytes:
    """A change's every pair as bytes (paths kept exactly, whatever their encoding)."""
    ordered = sorted(items.items(), key=lambda item: os.fsencode(item[0]))
    return _encoder.encode(
        _Manifest(
            paths=[os.fsencode(path) for path, _ in ordered],
            before=[pair[0] for _, pair in ordered],
            after=[pair[1] for _, pair in ordered],
        )
    )


def decode_manifest(data: bytes) -> dict[str, Pair]:
    manifest = _decoder.decode(data)
    return {
        os.fsdecode(path): (before, after)
        for path, before, after in zip(manifest.paths, manifest.before, manifest.after, strict=True)
    }


def iter_sorted(paths: Iterable[str]) -> Iterator[str]:
    yield from sorted(paths, key=os.fsencode)
