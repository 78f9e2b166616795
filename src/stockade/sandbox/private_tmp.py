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
import sys
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

    Only what is in the directory made is removed, through its own descriptor, opened
    once and checked to be it (device and inode): nothing when the path no longer
    names it (a command that may write its parent renamed it away: what stands there
    is not ours), and nothing of what stands at the name later (only an empty
    directory is removed by name, last). Never follows a link a command planted
    inside: what lies directly in it is removed through that descriptor (a link is
    unlinked itself), anything nested deeper by `shutil.rmtree`'s descriptor-based walk
    (`avoids_symlink_attacks` on Linux), which opens each directory relative to its
    parent, checked to be the entry it listed. Directories a command made unreadable
    are made readable again first (a caller other than root would otherwise leave
    them). Never raises.
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
            for _ in range(_ATTEMPTS):
                if _emptied(fd):
                    break
                _unlock(fd)
        finally:
            os.close(fd)
        try:
            os.rmdir(name, dir_fd=parent_fd)
        except FileNotFoundError:
            return True
        except OSError:
            return False  # not emptied (a survivor kept filling it), or not ours now
        return True
    finally:
        os.close(parent_fd)


def _emptied(fd: int) -> bool:
    """Remove everything in the directory `fd`; True when nothing is left. Files,
    links and empty directories (what a call usually leaves: a few files, bwrap's
    placeholders) directly; a directory with something in it by `shutil.rmtree`
    relative to `fd` (imported only then: exec's fast path goes without)."""
    try:
        with os.scandir(fd) as entries:
            names = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
    except OSError:
        return False
    left = False
    for entry, is_dir in names:
        try:
            if not is_dir:
                os.unlink(entry, dir_fd=fd)
                continue
            try:
                os.rmdir(entry, dir_fd=fd)
            except OSError as error:
                if error.errno != errno.ENOTEMPTY:
                    raise
                import shutil

                shutil.rmtree(entry, dir_fd=fd)
        except FileNotFoundError:
            pass
        except (OSError, RecursionError):
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


def _unlock(fd: int) -> None:
    """The directory `fd` and every directory under it made 0700, top down, so the
    next pass can list and empty them; `os.fwalk` walks by descriptor and never
    follows a link."""
    try:  # contextlib is not imported on exec's fast path
        os.fchmod(fd, 0o700)
        for _, directories, _, walked in os.fwalk(".", dir_fd=fd, follow_symlinks=False):
            for directory in directories:
                _chmod_directory(walked, directory)
    except (OSError, RecursionError):
        pass


class TmpWatch:
    """The watcher `watch_private_tmp` started: pid (int) and fd (int: the pipe's end
    this process holds; -1 once released)."""

    __slots__ = ("fd", "pid")

    def __init__(self, pid: int, fd: int) -> None:
        self.pid, self.fd = pid, fd

    def release(self) -> None:
        """This process removed the directory itself (or tried): the watcher is told so
        and waited for, so none outlives this process. Idempotent."""
        if self.fd < 0:
            return
        fd, self.fd = self.fd, -1
        try:  # noqa: SIM105 (contextlib is not imported on exec's fast path)
            os.write(fd, b"R\n")
        except OSError:
            pass  # it is gone already: nothing to tell
        os.close(fd)
        try:  # noqa: SIM105 (contextlib is not imported on exec's fast path)
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass


# The watcher: a POSIX shell (no interpreter of its own to start: Python's fork would
# cost its parent a copy of each page it then writes, some 4 ms of exec's) that reads
# fd 3, a pipe only its owner holds. "R" says the owner removed the directory itself;
# the pipe's end without it (the owner killed) runs this module's removal, which finds
# the directory held open on fd 4 meanwhile, from / (never a module found where the
# command worked: -I already leaves the working directory off the path on 3.11).
# $0: the interpreter; $1-$3: the PrivateTmp.
_WATCHER = (
    'IFS= read -r said <&3; [ "$said" = R ] || { cd / && '
    'exec "$0" -I -m stockade.sandbox.private_tmp --remove-watched "$1" "$2" "$3"; }'
)
_PINNED_FD = 4


def watch_private_tmp(tmp: PrivateTmp, shell: str = "/bin/sh") -> TmpWatch | None:
    """A process of its own that removes `tmp` once this one ended without removing
    it: killed (a SIGKILL, a kill of its process group) while its command ran. It holds
    the directory open, so its inode number names no other directory meanwhile and the
    removal's identity check is exact, and waits on a pipe only this process holds
    (`TmpWatch.release`, or this process's end). In a session of its own (a kill of
    this process group leaves it), /dev/null for its standard streams and none of this
    process's descriptors (those it inherited, or was given to pass on, are closed
    there). None when it cannot be started: then only this process removes it."""
    if not sys.executable:
        return None  # an embedded interpreter: nothing to run the removal with
    import fcntl  # exec has it already (the placeholders' locks)

    opened: list[int] = []
    write_end = -1
    try:
        pinned = os.open(tmp.path, _DIR_FLAGS)
        opened.append(pinned)
        info = os.fstat(pinned)
        if (info.st_dev, info.st_ino) != (tmp.device, tmp.inode):
            return None
        read_end, write_end = os.pipe()
        opened.append(read_end)
        # Above the watcher's 0-4 (none is clobbered on its way to its place there),
        # and inheritable: the child's own copies, closed once placed.
        sources = [fcntl.fcntl(fd, fcntl.F_DUPFD, _PINNED_FD + 1) for fd in (read_end, pinned)]
        opened += sources
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_DUP2, 1, 2),
            (os.POSIX_SPAWN_DUP2, sources[0], 3),
            (os.POSIX_SPAWN_DUP2, sources[1], _PINNED_FD),
            *((os.POSIX_SPAWN_CLOSE, fd) for fd in _inheritable() if fd > _PINNED_FD),
        ]
        argv = [shell, "-c", _WATCHER, sys.executable, tmp.path, str(tmp.device), str(tmp.inode)]
        pid = os.posix_spawn(shell, argv, {"PATH": os.defpath}, file_actions=actions, setsid=True)
        watch = TmpWatch(pid, write_end)
        write_end = -1
        return watch
    except OSError:
        return None
    finally:
        for fd in (*opened, write_end):
            if fd >= 0:
                os.close(fd)


def _inheritable() -> list[int]:
    """This process's descriptors a spawned process would inherit (its callers' left
    open, those it was given to pass on, and `watch_private_tmp`'s own copies)."""
    try:
        found = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return []
    inherited = []
    for fd in found:
        try:
            if os.get_inheritable(fd):
                inherited.append(fd)
        except OSError:
            pass  # the listing's own descriptor, closed since
    return inherited


def _remove_watched(path: str, device: str, inode: str) -> int:
    """The watcher's removal, its owner gone: `path` when it is still the directory held
    open on fd 4 (made by the owner, so its identity)."""
    try:
        held = os.fstat(_PINNED_FD)
    except OSError:
        return 1
    tmp = PrivateTmp(path, int(device), int(inode))
    if (held.st_dev, held.st_ino) != (tmp.device, tmp.inode):
        return 1
    return 0 if remove_private_tmp(tmp) else 1


def host_temp(allowed: bool) -> tuple[str, ...]:
    """The host's shared temp roots a policy also grants: all of them when the
    composition restores them (`allow_host_temp`), else none."""
    return host_temp_roots() if allowed else ()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--remove-watched"] and len(sys.argv) == 5:
        raise SystemExit(_remove_watched(*sys.argv[2:5]))
    raise SystemExit("usage: python -m stockade.sandbox.private_tmp --remove-watched PATH DEV INO")
