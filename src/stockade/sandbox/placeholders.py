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

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from collections.abc import Sequence

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


def _open_parent(parent: str) -> int | None:
    """An fd of the directory `parent` when it is still the real directory that path
    names (no link swapped in on the way); None when it is gone or reached through a
    link. Any other failure (EMFILE...) raises OSError."""
    try:
        fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError, ValueError):
        return None
    try:
        reached: str | None = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        reached = None
    if reached != parent:
        os.close(fd)
        return None
    return fd


class Parents:
    """The directories one call's placeholders sit in (a few, for some twenty
    placeholders), each opened and checked once for all the holds or sweeps in it;
    every step still works in the directory as opened. `close()` when done."""

    def __init__(self) -> None:
        self._fds: dict[str, int | None] = {}

    def find(self, path: str) -> tuple[int, str] | None:
        """(fd of the parent directory, the name in it), as `_open_parent` judges the
        parent; None when it is gone or reached through a link."""
        parent, name = os.path.split(path)
        if parent not in self._fds:
            self._fds[parent] = _open_parent(parent)
        fd = self._fds[parent]
        return (fd, name) if fd is not None and name else None

    def check(self) -> None:
        """The end of a batch of holds: StaleView unless each directory it opened is
        still the real directory its path names, judged afresh (`_open_parent`) and
        the same inode. A batch works in each directory as opened: one moved away or
        replaced between its holds (a command that can write an ancestor can keep a
        batch waiting for a locked placeholder, up to its patience) would leave holds
        on placeholders that the paths bwrap mounts over no longer name."""
        for parent, fd in self._fds.items():
            if fd is None:
                continue
            again = _open_parent(parent)
            if again is None:
                same = False
            else:
                try:
                    was, now = os.fstat(fd), os.fstat(again)
                finally:
                    os.close(again)
                same = (was.st_dev, was.st_ino) == (now.st_dev, now.st_ino)
            if not same:
                raise StaleView(errno.ENOENT, "its directory was moved or replaced", parent)

    def close(self) -> None:
        for fd in self._fds.values():
            if fd is not None:
                os.close(fd)
        self._fds.clear()


def _same(held: os.stat_result, parent: int, name: str) -> bool:
    """Whether `name` in `parent` still is the inode `held` (a descriptor's fstat) is."""
    try:
        now = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except OSError:
        return False
    return (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino)


def still_held(fd: int, path: str) -> bool:
    """Whether `path` still names the inode `fd` holds."""
    try:
        now = os.lstat(path)
    except OSError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino)


def _make(parent: int, name: str, directory: bool) -> int | None:
    """A marked placeholder `name` in `parent`, unless something is there (None): an
    empty directory, or a file holding its name's placeholder text (trust.placeholder_text:
    empty for most; "." for a `commondir`, which git cannot do without). A directory's
    descriptor is returned to be held (it was opened as `hold` opens one); a file's is
    closed (it was opened for writing), and None returned: `hold` opens it again."""
    try:
        if directory:
            os.mkdir(name, 0o755, dir_fd=parent)
            fd = os.open(name, _OPEN | os.O_DIRECTORY, dir_fd=parent)
        else:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(name, flags, 0o444, dir_fd=parent)
    except FileExistsError:
        return None
    try:
        if not directory and (text := placeholder_text(name).encode()):
            os.write(fd, text)
        os.utime(fd, (0, 0))
    except BaseException:
        os.close(fd)
        raise
    if directory:
        return fd
    os.close(fd)
    return None


def hold(path: str, directory: bool, parents: Parents | None = None) -> int | None:
    """A CLOEXEC fd holding a shared lock on the placeholder at `path`, made first
    when missing (`directory`: an empty directory, else an empty read-only file).

    None when another process is removing it right now: try again a moment later.
    Whatever else stands there (a directory or a regular file the guard judged a
    placeholder) is held as it is. NotAPlaceholder for a link, a FIFO, a device or a
    socket, or a parent now reached through a link; OSError when it cannot be made
    or opened. `parents`: the batch's directories, opened once (else this one's).
    """
    batch = parents if parents is not None else Parents()
    try:
        opened = batch.find(path)
        if opened is None:
            if not os.path.isdir(os.path.dirname(path)):
                raise StaleView(errno.ENOENT, "its directory is gone", path)
            raise NotAPlaceholder(errno.ELOOP, "its directory is reached through a link", path)
        parent, name = opened
        try:
            return _hold_in(parent, name, directory, path)
        except FileNotFoundError:
            # The batch opened the directory; it has been removed since (a lone hold
            # judging it afresh would have found it gone): guard again.
            if os.fstat(parent).st_nlink == 0 or not os.path.isdir(os.path.dirname(path)):
                raise StaleView(errno.ENOENT, "its directory is gone", path) from None
            raise
    finally:
        if parents is None:
            batch.close()


def _hold_in(parent: int, name: str, directory: bool, path: str) -> int | None:
    # A missing directory is the usual case (a cover on a name the root lacks): made
    # first, and the descriptor that made it is the one held.
    made = _make(parent, name, directory) if directory else None
    for _ in range(_ATTEMPTS):
        if made is not None:
            fd, made = made, None
        else:
            try:
                fd = os.open(name, _OPEN, dir_fd=parent)
            except FileNotFoundError:
                made = _make(parent, name, directory)
                continue
            except OSError as error:
                if error.errno == errno.ELOOP:
                    raise NotAPlaceholder(
                        errno.ELOOP, "a symbolic link stands there", path
                    ) from None
                raise
        try:
            held = os.fstat(fd)
            if not (stat.S_ISDIR(held.st_mode) or stat.S_ISREG(held.st_mode)):
                raise NotAPlaceholder(errno.EINVAL, "neither a directory nor a file", path)
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            if _same(held, parent, name):
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
    if made is not None:
        os.close(made)
    return None


def sweep(path: str, parents: Parents | None = None) -> bool:
    """Remove the placeholder at `path` when it is marked, empty and nobody holds it.

    True when done with it: removed, gone, in use by another process (its last user
    removes it), or not a placeholder of ours (kept). False while it is still a mount
    point in this process's own namespace ("Device or resource busy"): try later.
    `parents`: the batch's directories, opened once (else this one's).
    """
    batch = parents if parents is not None else Parents()
    try:
        try:
            opened = batch.find(path)
        except OSError:
            return False  # a passing shortage (EMFILE): try later
        if opened is None:
            return True  # gone, or reached through a link now: not ours to judge
        return _sweep_in(*opened)
    finally:
        if parents is None:
            batch.close()


def sweep_all(paths: Sequence[str]) -> None:
    """`sweep` each of `paths` once, in order (the innermost first is the caller's)."""
    parents = Parents()
    try:
        for path in paths:
            sweep(path, parents)
    finally:
        parents.close()


def _sweep_in(parent: int, name: str) -> bool:
    try:
        fd = os.open(name, _OPEN, dir_fd=parent)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        info = os.fstat(fd)
        if info.st_mtime_ns != 0 or not _same(info, parent, name):
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
    parents = Parents()
    try:
        for path, directory in blockers:
            while (fd := hold(path, directory, parents)) is None:
                if time.monotonic() > deadline:
                    raise BlockingIOError(errno.EAGAIN, "held by a process removing it", path)
                time.sleep(0.002)
            fds.append(fd)
        parents.check()
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    finally:
        parents.close()
    return fds
