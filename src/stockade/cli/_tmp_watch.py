"""The watcher of a one-shot command line's private temp directory (`stockade exec`,
`stockade run`): a process of its own that removes it should its owner be killed.

Standard library only (exec's fast path). The removal is sandbox/private_tmp.py's; this
is the process around it, so it lives with the verbs that spawn their commands.
"""

from __future__ import annotations

import os
import sys

from ..sandbox import PrivateTmp, remove_private_tmp

# The directory held open: never through a link.
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class TmpWatch:
    """The watcher `watch_private_tmp` started: pid (int: a child of this process, not
    reaped until `release`, so its number names no other process meanwhile) and fd
    (int: the pipe's end this process holds; -1 once released)."""

    __slots__ = ("fd", "pid")

    def __init__(self, pid: int, fd: int) -> None:
        self.pid, self.fd = pid, fd

    def release(self) -> None:
        """This process removed the directory itself (or tried): the watcher is ended
        (killed: nothing of it runs, no word to be written where nobody reads) and
        waited for, so none outlives this process. Idempotent."""
        if self.fd < 0:
            return
        fd, self.fd = self.fd, -1
        try:  # noqa: SIM105 (contextlib is not imported on exec's fast path)
            os.kill(self.pid, 9)  # SIGKILL (the signal module is not on exec's path)
        except OSError:
            pass
        os.close(fd)
        try:  # noqa: SIM105
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass


def remove_and_release(tmp: PrivateTmp, watch: TmpWatch | None) -> None:
    """`tmp` removed by its owner, then its watcher (if any) released: one step, so no
    way out between them leaves a watcher ended and the directory in place. What could
    not be removed is said on stderr, where the person sees the command's output."""
    try:
        if not remove_private_tmp(tmp):
            from ..shown import escaped_lines
            from .errors import say

            say(
                sys.stderr,
                f"stockade: the command's temp directory {escaped_lines(tmp.path)} could "
                "not be removed whole: remove it by hand\n",
            )
    finally:
        if watch is not None:
            watch.release()


# The watcher: a POSIX shell (no interpreter of its own to start: Python's fork would
# cost its parent a copy of each page it then writes, some 4 ms of exec's) that reads
# fd 3, a pipe only its owner holds, to its end (what is written there means nothing:
# its owner ends it with SIGKILL once done), then runs the removal: from / (never a
# module found where the command worked), its import root named (not found through
# site or PYTHONPATH, which -I -S ignore: stockade installed with --user, or run from a
# source tree), with the directory held open on fd 4. $0: the interpreter; $1: the
# import root; $2-$4: the PrivateTmp.
_WATCHER = (
    'while IFS= read -r _ <&3; do :; done; cd / && exec "$0" -I -S -c '
    "'import sys; sys.path.insert(0, sys.argv[1]); "
    "from stockade.cli._tmp_watch import _remove_watched as remove; "
    'raise SystemExit(remove(*sys.argv[2:5]))\' "$1" "$2" "$3" "$4"'
)
_PINNED_FD = 4
# Real paths, the interpreter's too: what `installation_paths` keeps read-only, never a
# way through a link a command could re-point before the watcher runs (as root, unconfined).
_IMPORT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))


def watch_private_tmp(tmp: PrivateTmp, shell: str = "/bin/sh") -> TmpWatch | None:
    """A process of its own that removes `tmp` once this one ended without removing
    it: killed (a SIGKILL, a kill of its process group) while its command ran. It holds
    the directory open, so its inode number names no other directory meanwhile and the
    removal's identity check is exact, and waits for the end of a pipe only this
    process holds (`TmpWatch.release`, or this process's end). In a session of its own
    (a kill of this process group leaves it), /dev/null for its standard streams and
    none of this process's descriptors (those it inherited, or was given to pass on,
    are closed there). None when it cannot be started (no /bin/sh, no /proc to list
    what to close, a frozen or embedded interpreter): then only this process removes
    the directory."""
    if not sys.executable or getattr(sys, "frozen", False):
        return None  # nothing to run the removal with
    import fcntl  # exec has it already (the placeholders' locks)

    opened: list[int] = []
    write_end = -1
    try:
        inherited = _inheritable()
        if inherited is None:
            return None
        pinned = os.open(tmp.path, _DIR_FLAGS)
        opened.append(pinned)
        info = os.fstat(pinned)
        if (info.st_dev, info.st_ino) != (tmp.device, tmp.inode):
            return None
        read_end, write_end = os.pipe()
        opened.append(read_end)
        # Above the watcher's 0-4 (none is clobbered on its way to its place there),
        # and inheritable: the child's own copies, closed once placed.
        sources = []
        for fd in (read_end, pinned):
            sources.append(fcntl.fcntl(fd, fcntl.F_DUPFD, _PINNED_FD + 1))
            opened.append(sources[-1])
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_DUP2, 1, 2),
            (os.POSIX_SPAWN_DUP2, sources[0], 3),
            (os.POSIX_SPAWN_DUP2, sources[1], _PINNED_FD),
            *((os.POSIX_SPAWN_CLOSE, fd) for fd in (*inherited, *sources) if fd > _PINNED_FD),
        ]
        argv = [shell, "-c", _WATCHER, os.path.realpath(sys.executable), _IMPORT_ROOT]
        argv += [tmp.path, str(tmp.device), str(tmp.inode)]
        pid = os.posix_spawn(shell, argv, {"PATH": os.defpath}, file_actions=actions, setsid=True)
        watch = TmpWatch(pid, write_end)
        write_end = -1
        return watch
    except (OSError, NotImplementedError):  # NotImplementedError: a libc without setsid
        return None
    finally:
        for fd in (*opened, write_end):
            if fd >= 0:
                os.close(fd)


def _inheritable() -> list[int] | None:
    """This process's descriptors a spawned process would inherit (its caller's left
    open, those it was given to pass on); None without /proc to list them."""
    try:
        found = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return None
    inherited = []
    for fd in found:
        try:
            if os.get_inheritable(fd):
                inherited.append(fd)
        except OSError:
            pass  # the listing's own descriptor, closed since
    return inherited


def _remove_watched(path: str, device: str, inode: str) -> int:
    """The watcher's removal, its owner gone: `path` when it still names the directory
    held open on fd 4 (whose inode number, held so, names no other directory)."""
    tmp = PrivateTmp(path, int(device), int(inode))
    try:
        held = os.fstat(_PINNED_FD)
    except OSError:
        return 1
    if (held.st_dev, held.st_ino) != (tmp.device, tmp.inode):
        return 1
    return 0 if remove_private_tmp(tmp) else 1
