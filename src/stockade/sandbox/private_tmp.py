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
    """Remove `tmp` and everything in it; True when it is gone. Never raises.

    Only what is in the directory made is removed, through a descriptor checked to be
    it (device and inode): nothing when the path no longer names it (a command that may
    write its parent renamed it away: what stands there is not ours), and by name only
    the emptied directory, checked again. Inside, every directory is opened relative to
    the one above it, never through a link and never blocking (`_empty_tree`: not
    `shutil.rmtree` and `os.fwalk`, which on 3.11 open what they listed, a link or a
    FIFO swapped in since, before they check it). Directories a command made
    unreadable or unwritable, the directory itself too, are made 0700 first (a caller
    other than root would otherwise leave them).
    """
    parent, name = os.path.split(tmp.path)
    try:
        parent_fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fd = _opened(parent_fd, name, tmp)
        if fd == _GONE:
            return True
        if fd < 0:
            return False
        try:
            emptied = any(_empty_tree(fd) for _ in range(_ATTEMPTS))
        finally:
            os.close(fd)
        if not emptied:
            return False  # a survivor kept filling it
        try:
            now = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
            if (now.st_dev, now.st_ino) == (tmp.device, tmp.inode):
                os.rmdir(name, dir_fd=parent_fd)  # only an empty directory
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return (now.st_dev, now.st_ino) == (tmp.device, tmp.inode)
    finally:
        os.close(parent_fd)


_GONE = -2
# A directory inside, opened relative to the one above: never through a link
# (O_NOFOLLOW), never anything but a directory (O_DIRECTORY: a FIFO swapped in fails
# before its open could block), never blocking.
_WALK_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
# Deeper than this is moved up (one descriptor a level while the walk is down there):
# a directory met this deep is renamed into the top one and walked from there.
_MAX_DEPTH = 512
# The most such moves one walk makes (each lifts a subtree at least _MAX_DEPTH levels
# up; more than a whole tree of a thousand such chains means something refills it).
_MAX_MOVES = 1 << 16


def _opened(parent_fd: int, name: str, tmp: PrivateTmp) -> int:
    """The directory `name` in `parent_fd` opened for reading when it is `tmp` (made
    0700 first when a command took its rights away: opened without any, changed and
    opened again through the descriptor, never the name); -1 when it is not, _GONE when
    nothing is there."""
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except FileNotFoundError:
        return _GONE
    except PermissionError:
        return _reopened(parent_fd, name, tmp)
    except OSError:
        return -1  # a link now, or not a directory: not the directory made
    try:
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) != (tmp.device, tmp.inode):
            os.close(fd)
            return -1
        _owner_rights(fd)
    except OSError:
        os.close(fd)
        return -1
    return fd


def _reopened(parent_fd: int, name: str, tmp: PrivateTmp) -> int:
    try:
        bare = os.open(name, _PATH_FLAGS | os.O_DIRECTORY, dir_fd=parent_fd)
    except OSError:
        return -1
    try:
        info = os.fstat(bare)
        if (info.st_dev, info.st_ino) != (tmp.device, tmp.inode):
            return -1
        os.chmod(f"/proc/self/fd/{bare}", 0o700)
        return os.open(f"/proc/self/fd/{bare}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return -1
    finally:
        os.close(bare)


def _owner_rights(fd: int) -> None:
    """The directory `fd` made 0700 when a command took its owner's rights away (its
    entries could not be removed); best effort."""
    try:  # contextlib is not imported on exec's fast path
        if stat.S_IMODE(os.fstat(fd).st_mode) & 0o700 != 0o700:
            os.fchmod(fd, 0o700)
    except OSError:
        pass


def _listed(fd: int) -> list[tuple[str, bool]] | None:
    """The entries of the directory `fd`: (name, a directory itself, not a link)."""
    try:
        with os.scandir(fd) as entries:
            return [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
    except OSError:
        return None


def _removed_flat(fd: int, entries: list[tuple[str, bool]]) -> tuple[list[str], bool]:
    """Remove what lies directly in `fd`: files, links (themselves) and empty
    directories; (the directories with something in them, whether anything failed)."""
    full: list[str] = []
    failed = False
    for name, is_dir in entries:
        try:
            if is_dir:
                os.rmdir(name, dir_fd=fd)
            else:
                os.unlink(name, dir_fd=fd)
        except FileNotFoundError:
            pass
        except OSError as error:
            if is_dir and error.errno in (errno.ENOTEMPTY, errno.EEXIST):
                full.append(name)
            else:
                failed = True
    return full, failed


def _opened_below(fd: int, name: str) -> int:
    """The directory `name` in `fd` (`_WALK_FLAGS`), made 0700 first when it could not
    be opened for its mode (through an O_PATH descriptor); -1 when it cannot be."""
    try:
        return os.open(name, _WALK_FLAGS, dir_fd=fd)
    except PermissionError:
        _chmod_directory(fd, name)
    except OSError:
        return -1
    try:
        return os.open(name, _WALK_FLAGS, dir_fd=fd)
    except OSError:
        return -1


def _empty_tree(top: int) -> bool:
    """Remove everything in the directory `top`, depth first without recursion; True
    when nothing is left. Each directory is opened by `_opened_below` and made writable
    for its owner before its entries go. One met `_MAX_DEPTH` levels down is renamed
    into `top` and walked from there (a command may nest directories past any bound)."""
    entries = _listed(top)
    if entries is None:
        return False
    full, left = _removed_flat(top, entries)
    # (descriptor, its name in the directory below it in the stack, its full subdirectories)
    stack: list[tuple[int, str, list[str]]] = [(top, "", full)]
    moves = 0
    try:
        while stack:
            fd, name, pending = stack[-1]
            if not pending:
                stack.pop()
                if stack:
                    os.close(fd)
                    try:
                        os.rmdir(name, dir_fd=stack[-1][0])
                    except FileNotFoundError:
                        pass
                    except OSError:
                        left = True
                continue
            below = pending.pop()
            if len(stack) > _MAX_DEPTH:
                lifted = _lifted(fd, below, top, moves) if moves < _MAX_MOVES else None
                if lifted is None:
                    left = True
                else:
                    moves += 1
                    stack[0][2].append(lifted)
                continue
            child = _opened_below(fd, below)
            if child < 0:
                left = True
                continue
            _owner_rights(child)
            entries = _listed(child)
            if entries is None:
                os.close(child)
                left = True
                continue
            full, failed = _removed_flat(child, entries)
            left = left or failed
            stack.append((child, below, full))
    finally:
        for fd, _, _ in stack[1:]:
            os.close(fd)
    return not left


def _lifted(fd: int, name: str, top: int, count: int) -> str | None:
    """The directory `name` in `fd` renamed into `top` under a name free there (the
    walk's own: nothing else runs in the directory by now); its new name, or None."""
    for attempt in range(16):
        new = f".stockade-lifted-{count}-{attempt}"
        try:
            os.lstat(new, dir_fd=top)
            continue  # taken: never replace an entry (an empty directory would be)
        except FileNotFoundError:
            pass
        except OSError:
            return None
        try:
            os.rename(name, new, src_dir_fd=fd, dst_dir_fd=top)
        except OSError:
            return None
        return new
    return None


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


def host_temp(allowed: bool) -> tuple[str, ...]:
    """The host's shared temp roots a policy also grants: all of them when the
    composition restores them (`allow_host_temp`), else none."""
    return host_temp_roots() if allowed else ()
