"""A session's private temp directory: made (mode 0700) in the host temp root when a
session opens, its commands' TMPDIR and only writable temp place, removed when it ends.

Standard library only (`stockade exec` makes one around its single command). Why not
the host's `/tmp`: a command that can write the shared temp roots can plant files
other processes on the host pick up (predictable names, sockets, caches), so
workspace-write grants this directory instead (docs/security.md, "Temp directories").
"""

from __future__ import annotations

import errno
import os
import stat
from collections import namedtuple

from ..trust import host_temp_roots

PREFIX = "stockade-tmp-"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_PATH_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_NOFOLLOW | os.O_CLOEXEC
# A command still running (a survivor that left its process group) may fill the
# directory while it is removed: this many passes, then it is left behind.
_ATTEMPTS = 3


class PrivateTmp(namedtuple("PrivateTmp", "path device inode")):
    """A directory this process made: path (str, real), device and inode (int): what
    `remove_private_tmp` checks still stands there before it removes anything."""

    __slots__ = ()


def default_parent() -> str:
    """Where private temp directories are made: this process's own $TMPDIR when it is
    an absolute existing directory, else /tmp (real paths)."""
    return host_temp_roots()[-1]


def make_private_tmp(
    parent: str | None = None, *, name: str | None = None, reuse: bool = False
) -> PrivateTmp:
    """A new directory in `parent` (default: `default_parent()`), mode 0700 whatever
    the umask, owned by this process's user: `PREFIX + name` when that is free (a
    session's id, so a resumed session gets the same path back), else a random name.
    An existing directory is never taken over, whoever made it, but with `reuse` (a
    session resumed after its process was killed, which left it): then `PREFIX +
    name` is taken back when it is a directory, not a link, of this user with mode
    0700 (what only this user, or root, could have made: `_ours`).

    Raises OSError when it cannot be made (a read-only or full temp root)."""
    parent = os.path.realpath(parent or default_parent())
    parent_fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    wanted = [PREFIX + name] if name else []
    try:
        if reuse and name:
            left = _ours(parent_fd, PREFIX + name)
            if left is not None:
                return PrivateTmp(os.path.join(parent, PREFIX + name), *left)
        for attempt in range(100):
            name = wanted[attempt] if attempt < len(wanted) else PREFIX + os.urandom(6).hex()
            try:
                os.mkdir(name, 0o700, dir_fd=parent_fd)
            except FileExistsError:
                continue
            fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
            try:
                os.fchmod(fd, 0o700)
                info = os.fstat(fd)
            finally:
                os.close(fd)
            return PrivateTmp(os.path.join(parent, name), info.st_dev, info.st_ino)
        raise FileExistsError(errno.EEXIST, "no free name for a private temp directory", parent)
    finally:
        os.close(parent_fd)


def _ours(parent_fd: int, name: str) -> tuple[int, int] | None:
    """(device, inode) of the directory `name` in `parent_fd` when it is one this user
    left: never through a link, owned by this user, mode 0700; else None."""
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
    finally:
        os.close(fd)
    if info.st_uid != os.geteuid() or stat.S_IMODE(info.st_mode) != 0o700:
        return None
    return info.st_dev, info.st_ino


def remove_private_tmp(tmp: PrivateTmp) -> bool:
    """Remove `tmp` and everything in it; True when it is gone.

    Never follows a link a command planted inside: what lies directly in it is removed
    through the directory's own descriptor (a link is unlinked itself), and anything
    nested deeper by `shutil.rmtree`'s descriptor-based walk (`avoids_symlink_attacks`
    on Linux), which opens each directory relative to its parent, checked to be the
    entry it listed. Nothing is
    removed when the path no longer names the directory made (a command that may
    write the host temp roots renamed it away: what stands there is not ours).
    Directories a command made unreadable are made readable again first (a caller
    other than root would otherwise leave them). Never raises.
    """
    parent, name = os.path.split(tmp.path)
    try:
        parent_fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
        except FileNotFoundError:
            return True
        except OSError:
            return False  # a link now, or unreadable: not the directory made
        try:
            info = os.fstat(fd)
            if (info.st_dev, info.st_ino) != (tmp.device, tmp.inode):
                return False
            flat = _empty_flat(fd)
        finally:
            os.close(fd)
        if flat:
            try:
                os.rmdir(name, dir_fd=parent_fd)
                return True
            except FileNotFoundError:
                return True
            except OSError:
                pass
        import shutil  # only for what is nested deeper: exec's fast path goes without

        for _ in range(_ATTEMPTS):
            try:
                shutil.rmtree(name, dir_fd=parent_fd)
                return True
            except FileNotFoundError:
                return True
            except (OSError, RecursionError):
                _unlock(parent_fd, name)
        return False
    finally:
        os.close(parent_fd)


def _empty_flat(fd: int) -> bool:
    """Remove the files, links and empty directories directly in the directory `fd`
    (what a call usually leaves: a few files, bwrap's placeholders); True when none is
    left. A link is unlinked itself, never followed."""
    try:
        with os.scandir(fd) as entries:
            names = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
    except OSError:
        return False
    left = False
    for entry, is_dir in names:
        try:
            if is_dir:
                os.rmdir(entry, dir_fd=fd)
            else:
                os.unlink(entry, dir_fd=fd)
        except OSError:
            left = True
    return not left


def _chmod_directory(dir_fd: int, name: str) -> None:
    """Mode 0700 on the directory `name` in `dir_fd`, never through a link: opened
    with O_PATH (no read right needed), changed through its /proc/self/fd entry."""
    try:
        fd = os.open(name, _PATH_FLAGS, dir_fd=dir_fd)
    except OSError:
        return
    try:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            os.chmod(f"/proc/self/fd/{fd}", 0o700)
    except OSError:
        pass
    finally:
        os.close(fd)


def _unlock(parent_fd: int, name: str) -> None:
    """Every directory under `name` made 0700, top down, so the next rmtree can list
    and empty it; `os.fwalk` walks by descriptor and never follows a link."""
    _chmod_directory(parent_fd, name)
    try:  # contextlib is not imported on exec's fast path
        for _, directories, _, fd in os.fwalk(name, dir_fd=parent_fd, follow_symlinks=False):
            for directory in directories:
                _chmod_directory(fd, directory)
    except (OSError, RecursionError):
        pass


def host_temp(allowed: bool) -> tuple[str, ...]:
    """The host's shared temp roots a policy also grants: all of them when the
    composition restores them (`allow_host_temp`), else none."""
    return host_temp_roots() if allowed else ()
