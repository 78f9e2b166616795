"""Placeholders: the empty directories and files bwrap mounts over to block a missing
protected path; held by every process whose sandbox uses one, removed by the last.

Why a lock: removing a mount point on the host detaches the mounts on it in every
other mount namespace (Linux >= 3.18), so one stockade process removing a placeholder
that another process's sandbox still uses would switch that sandbox's protection off
(and one removing it while another's bwrap is setting up fails that call). Each user
holds a shared flock on the placeholder's inode for as long as its sandbox may run; a
remover needs the exclusive lock, so only the last user removes it. No sandbox that
protects the path can open that inode (its mount covers it), so no confined command
can take or drop these locks.

A placeholder made here is marked by a modification time of 0 (1970-01-01): only a
marked one that is empty (or holds exactly its name's placeholder text) is ever
removed, so an empty `.git/hooks` or `stockade.yml` of the user's own is left alone.
Every step works in the placeholder's parent directory as opened once and found to
be the real path the guard named: a command that can write an ancestor (another
session's, through a temp root) cannot swap in a link that sends a make or a removal
elsewhere.

Standard library only: `stockade exec` holds placeholders too.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat

from ..trust import placeholder_text

# Opening a path that a writable root's other users could have changed: never follow a
# link, never block on a FIFO, never take a terminal.
_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY
# A placeholder removed and made again between opening and locking it: look again.
_ATTEMPTS = 8


class StaleView(FileNotFoundError):
    """The placeholder's directory is gone: the guard that named it saw a disk that
    has changed since (another process removed its placeholder); ask it again."""


class NotAPlaceholder(OSError):
    """Something other than a directory or a regular file stands at the path, or the
    path is now reached through a symbolic link."""


def _parent(path: str) -> tuple[int, str] | None:
    """(fd of the parent directory, the name in it) when the parent is still the real
    directory `path` names (no link swapped in on the way); None when it is gone or
    reached through a link. Any other failure (EMFILE...) raises OSError."""
    parent, name = os.path.split(path)
    try:
        fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError, ValueError):
        return None
    try:
        reached: str | None = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        reached = None
    if reached != parent or not name:
        os.close(fd)
        return None
    return fd, name


def _same(fd: int, parent: int, name: str) -> bool:
    """Whether `name` in `parent` still is the inode `fd` holds."""
    try:
        now = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except OSError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino)


def still_held(fd: int, path: str) -> bool:
    """Whether `path` still names the inode `fd` holds."""
    try:
        now = os.lstat(path)
    except OSError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino)


def _make(parent: int, name: str, directory: bool) -> None:
    """A marked placeholder `name` in `parent`, unless something is there: an empty
    directory, or a file holding its name's placeholder text (trust.placeholder_text:
    empty for most; "." for a `commondir`, which git cannot do without)."""
    try:
        if directory:
            os.mkdir(name, 0o755, dir_fd=parent)
            flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(name, flags, dir_fd=parent)
        else:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(name, flags, 0o444, dir_fd=parent)
    except FileExistsError:
        return
    try:
        if not directory and (text := placeholder_text(name).encode()):
            os.write(fd, text)
        os.utime(fd, (0, 0))
    finally:
        os.close(fd)


def hold(path: str, directory: bool) -> int | None:
    """A CLOEXEC fd holding a shared lock on the placeholder at `path`, made first
    when missing (`directory`: an empty directory, else an empty read-only file).

    None when another process is removing it right now: try again a moment later.
    Whatever else stands there (a directory or a regular file the guard judged a
    placeholder) is held as it is. NotAPlaceholder for a link, a FIFO, a device or a
    socket, or a parent now reached through a link; OSError when it cannot be made
    or opened.
    """
    opened = _parent(path)
    if opened is None:
        if not os.path.isdir(os.path.dirname(path)):
            raise StaleView(errno.ENOENT, "its directory is gone", path)
        raise NotAPlaceholder(errno.ELOOP, "its directory is reached through a link", path)
    parent, name = opened
    try:
        return _hold_in(parent, name, directory, path)
    finally:
        os.close(parent)


def _hold_in(parent: int, name: str, directory: bool, path: str) -> int | None:
    for _ in range(_ATTEMPTS):
        try:
            fd = os.open(name, _OPEN, dir_fd=parent)
        except FileNotFoundError:
            _make(parent, name, directory)
            continue
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise NotAPlaceholder(errno.ELOOP, "a symbolic link stands there", path) from None
            raise
        try:
            kind = os.fstat(fd).st_mode
            if not (stat.S_ISDIR(kind) or stat.S_ISREG(kind)):
                raise NotAPlaceholder(errno.EINVAL, "neither a directory nor a file", path)
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            if _same(fd, parent, name):
                return fd
            os.close(fd)  # removed, and perhaps made again, meanwhile
        except BlockingIOError:
            os.close(fd)
            return None
        except BaseException:
            try:  # noqa: SIM105 (contextlib is not imported on exec's fast path)
                os.close(fd)
            except OSError:
                pass
            raise
    return None


def sweep(path: str) -> bool:
    """Remove the placeholder at `path` when it is marked, empty and nobody holds it.

    True when done with it: removed, gone, in use by another process (its last user
    removes it), or not a placeholder of ours (kept). False while it is still a mount
    point in this process's own namespace ("Device or resource busy"): try later.
    """
    try:
        opened = _parent(path)
    except OSError:
        return False  # a passing shortage (EMFILE): try later
    if opened is None:
        return True  # gone, or reached through a link now: not ours to judge
    parent, name = opened
    try:
        return _sweep_in(parent, name)
    finally:
        os.close(parent)


def _sweep_in(parent: int, name: str) -> bool:
    try:
        fd = os.open(name, _OPEN, dir_fd=parent)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        info = os.fstat(fd)
        if info.st_mtime_ns != 0 or not _same(fd, parent, name):
            return True
        if stat.S_ISDIR(info.st_mode):
            os.rmdir(name, dir_fd=parent)  # refuses a directory that is not empty
        elif stat.S_ISREG(info.st_mode) and _holds_only_its_text(fd, info, name):
            os.unlink(name, dir_fd=parent)
    except BlockingIOError:
        return True
    except OSError as error:
        return error.errno != errno.EBUSY
    finally:
        os.close(fd)
    return True


def _holds_only_its_text(fd: int, info: os.stat_result, name: str) -> bool:
    """Whether the file open at `fd` is empty or holds exactly its placeholder text."""
    text = placeholder_text(name).encode()
    if info.st_size == 0 or info.st_size != len(text):
        return info.st_size == 0
    return os.pread(fd, len(text) + 1, 0) == text


def hold_all(blockers: list[tuple[str, bool]], patience: float = 2.0) -> list[int]:
    """`hold` each (path, directory), waiting out a removal in progress for up to
    `patience` seconds; the fds in order. For a caller that may block (`stockade exec`);
    the executor waits on its own loop instead."""
    import time

    deadline = time.monotonic() + patience
    fds: list[int] = []
    try:
        for path, directory in blockers:
            while (fd := hold(path, directory)) is None:
                if time.monotonic() > deadline:
                    raise BlockingIOError(errno.EAGAIN, "held by a process removing it", path)
                time.sleep(0.002)
            fds.append(fd)
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return fds
