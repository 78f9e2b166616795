"""Putting a plan's states back on disk without ever leaving the root: each parent reached
from the root's descriptor with O_NOFOLLOW (a symlink planted where a directory was is
removed, never entered), each file written whole beside its name and renamed over it.

Writing a new file and renaming it means a reader sees the old content or the new, never
a part, and a name hard-linked to a file elsewhere is replaced, never written through.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat

import attrs

from ..reprs import fields_repr
from ._inotify import sync_filesystem
from ._model import Entry, parent_of, tree_order
from ._plan import Plan
from ._store import SnapshotStore, StoreError, room_left
from ._walk import DIRECTORY_FLAGS, Beneath

_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


@attrs.frozen
class Applied:
    """What applying a plan did: the paths put back, and those left with the reason."""

    __repr__ = fields_repr

    done: tuple[str, ...] = ()
    left: tuple[tuple[str, str], ...] = ()


class NoRoom(StoreError):
    """A plan would write more than the root's filesystem has free (refused before
    anything is touched, as a store that cannot give a content back is)."""


def _check_room(root_fd: int, wanted: int) -> None:
    """NoRoom when writing `wanted` bytes would leave the root's filesystem less than
    ROOM_KEPT free to an unprivileged writer (root's own reserve is never used). An
    undo writes each file whole: a sparse file, or each name of a hard-linked one, takes
    its full size (32 MiB of holes and 100 links made 3.2 GB)."""
    try:
        info = os.fstatvfs(root_fd)
    except OSError:
        return
    if wanted > room_left(info):
        free = info.f_bavail * info.f_frsize
        raise NoRoom(
            f"it would write {wanted} bytes where {free} are free on the root's "
            "filesystem (each file is written whole: a sparse file, or each name of a "
            "hard-linked one, takes its full size)"
        )


class _Left(Exception):
    pass


def _kind(st: os.stat_result | None) -> str | None:
    if st is None:
        return None
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    if stat.S_ISLNK(st.st_mode):
        return "link"
    return "file" if stat.S_ISREG(st.st_mode) else "other"


def _temporary_name() -> str:
    return f".stockade-undo-{secrets.token_hex(8)}"


def _parent(beneath: Beneath, path: str) -> int:
    fd = beneath.dir(parent_of(path))
    if fd is None:
        raise _Left("its directory is not there (or is not a directory: a link is not followed)")
    return fd


def _remove(beneath: Beneath, path: str, kind: str) -> None:
    parent = _parent(beneath, path)
    name = path.rpartition("/")[2]
    try:
        if kind == "dir":
            os.rmdir(name, dir_fd=parent)
        else:
            os.unlink(name, dir_fd=parent)
    except OSError as error:
        if error.errno in (errno.ENOTEMPTY, errno.EEXIST):
            raise _Left("it holds files the history does not record; left in place") from None
        if error.errno != errno.ENOENT:
            raise


def _write_file(beneath: Beneath, path: str, entry: Entry, store: SnapshotStore) -> None:
    assert entry.digest is not None
    data = store.get(entry.digest)
    parent = _parent(beneath, path)
    temporary = _temporary_name()
    fd = os.open(temporary, _NEW_FILE, 0o600, dir_fd=parent)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fchmod(fd, entry.mode)
    except BaseException:
        os.close(fd)
        os.unlink(temporary, dir_fd=parent)
        raise
    os.close(fd)
    os.rename(temporary, path.rpartition("/")[2], src_dir_fd=parent, dst_dir_fd=parent)


def _write_link(beneath: Beneath, path: str, entry: Entry) -> None:
    assert entry.target is not None
    parent = _parent(beneath, path)
    temporary = _temporary_name()
    os.symlink(entry.target, temporary, dir_fd=parent)
    os.rename(temporary, path.rpartition("/")[2], src_dir_fd=parent, dst_dir_fd=parent)


def _make_dir(beneath: Beneath, path: str) -> None:
    os.mkdir(path.rpartition("/")[2], 0o700, dir_fd=_parent(beneath, path))


def _set_dir_mode(beneath: Beneath, path: str, mode: int) -> None:
    fd = os.open(path.rpartition("/")[2], DIRECTORY_FLAGS, dir_fd=_parent(beneath, path))
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def apply_plan(root_fd: int, plan: Plan, store: SnapshotStore) -> Applied:
    """Make each path of `plan` hold its target: what is there and must go first (deepest
    first), then directories, files and links (shallowest first), then directory modes
    (deepest first, so a read-only directory is filled before it is closed). A content
    the store cannot give back intact raises `StoreError` before anything is touched."""
    wanted = 0
    for target in plan.targets.values():
        if target is not None and target.kind == "file" and target.digest is not None:
            # Every content checked before anything is touched, and the room it needs.
            wanted += len(store.get(target.digest))
    _check_room(root_fd, wanted)
    left: dict[str, str] = {}
    done: list[str] = []
    beneath = Beneath(root_fd)
    try:
        # In tree order (a directory's insides right after it, or right before it going
        # back up), so the directories above a path are still open: in any other order a
        # tree thousands deep is reopened from the root for every path.
        in_order = sorted(plan.targets, key=tree_order)
        present = {path: _kind(beneath.lstat(path)) for path in in_order}
        for path in reversed(in_order):
            target, kind = plan.targets[path], present[path]
            if kind is None or (target is not None and target.kind == kind and kind != "other"):
                continue
            try:
                _remove(beneath, path, kind)
            except _Left as why:
                left[path] = str(why)
            except OSError as error:
                left[path] = f"cannot remove it: {error.strerror}"
            else:
                present[path] = None
        beneath.forget()  # a directory removed above must not be reached through an old fd
        for path in in_order:
            target = plan.targets[path]
            if path in left:
                continue
            try:
                if target is None:
                    pass
                elif target.kind == "dir":
                    if present[path] != "dir":
                        _make_dir(beneath, path)
                elif target.kind == "file":
                    _write_file(beneath, path, target, store)
                elif target.kind == "link":
                    _write_link(beneath, path, target)
                else:
                    raise _Left("the history cannot make this kind of file")
            except _Left as why:
                left[path] = str(why)
            except OSError as error:
                left[path] = f"cannot write it: {error.strerror}"
            else:
                done.append(path)
        for path in reversed(in_order):
            target = plan.targets[path]
            if target is None or target.kind != "dir" or path in left:
                continue
            try:
                _set_dir_mode(beneath, path, target.mode)
            except (_Left, OSError) as why:
                left[path] = f"cannot set its mode: {why}"
    finally:
        beneath.forget()
        sync_filesystem(root_fd)
    return Applied(tuple(p for p in done if p not in left), tuple(sorted(left.items())))
