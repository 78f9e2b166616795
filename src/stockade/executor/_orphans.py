"""The zombies a call leaves a harness that is its PID namespace's init (an agent run as
a container's pid 1, `docker run` without `--init`), or a stockade process that made
itself its descendants' reaper under such an init: its group's and its cgroup's.

Orphans come to the nearest reaper. Where the harness is pid 1, nothing else reaps for
it: a `danger-full-access` call whose command left a process behind (`sleep 9 &`)
would leave one zombie per such process, for good, until the container's pid limit
ends every fork. Only what is the call's is reaped, never a child of the embedder's
(whose status is its own waiter's): a zombie whose process group is the call's (a
group exists while any member does, so its number names no other process's group
meanwhile), or one pinned by a pidfd while it was alive in the call's cgroup.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time

# waitid(P_PIDFD) (Linux 5.4); a Python built against older headers lacks the name.
_P_PIDFD = getattr(os, "P_PIDFD", 3)


# prctl(2)'s option: the orphans of this process's descendants come to it.
PR_SET_CHILD_SUBREAPER = 36
# Whether `adopt_orphans` made this process a subreaper (an exec would pass it on).
_adopted: list[bool] = []


def adopt_orphans(*, unless_init_reaps: bool = False) -> bool:
    """Where this process's parent is its PID namespace's init, make this process its
    descendants' reaper (PR_SET_CHILD_SUBREAPER); True when it is now one. bwrap's
    namespace init outlives bwrap (a probe's, every call's), and what a command leaves
    outlives it: they come here, where the calls reap them (`reaps_orphans`), not to
    an init that may never reap them: an agent run as a container's pid 1 (`docker run`
    without `--init`) that reaps only its own children was left a zombie per call, until
    the container's pid limit ended every fork. Called by stockade's own processes only
    (a confining `exec`, the verbs that end with their command, and the servers
    `unless_init_reaps`: entry.py), never by a harness in an embedder's: ctypes (~5 ms)
    loads only then. `unless_init_reaps`: not where the init reaps a test orphan
    (`init_reaps`): a long-lived process adopted under a reaping init would keep, for
    its whole life, the zombies of an unconfined command's processes that left its
    group and ended on their own, which that init reaped. Left as it was: a process
    whose parent is not pid 1 under such an init (orphans skip every ancestor but a
    subreaper, and none can be told from here); a shell that runs stockade as its
    last command execs it, so its parent is pid 1 again."""
    if os.getppid() != 1 or os.getpid() == 1 or not sys.platform.startswith("linux"):
        return False  # pid 1 itself is every orphan's reaper already; no prctl elsewhere
    if unless_init_reaps and init_reaps():
        return False
    try:
        import ctypes

        if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0:
            _adopted.append(True)
    except (ImportError, OSError, AttributeError):
        pass  # no ctypes (a minimal build) or no prctl: orphans go where they went
    return bool(_adopted)


# How long an init is given to reap a test orphan (`init_reaps`): tini, docker's init
# and systemd reap at once, on SIGCHLD. A server whose init never reaps pays it at start.
INIT_REAPS_WITHIN = 0.25
# How long the test orphan is given to end once told (it only reads a pipe's end).
ORPHAN_ENDS_WITHIN = 5.0


def init_reaps() -> bool:
    """Whether this PID namespace's init reaps an orphan handed to it: a test process
    whose parent ended is watched, by a pidfd opened while it still ran, until it ends
    (`ORPHAN_ENDS_WITHIN`; False past it) and then until it is reaped
    (`INIT_REAPS_WITHIN`). Where the init does not, the test process is its zombie for
    good: one, where every call would leave one. True whenever it cannot be told (no
    fork, no pidfd)."""
    go_read, go_write = os.pipe()
    said_read, said_write = os.pipe()
    try:
        middle = os.fork()
    except OSError:
        for fd in (go_read, go_write, said_read, said_write):
            os.close(fd)
        return True
    if middle == 0:  # pragma: no cover - the forked child, ended by os._exit
        try:
            orphan = os.fork()
            if orphan == 0:
                # Holding none of the report's pipe, which would keep the parent waiting
                # on it should the middle process die before it writes.
                for fd in (said_read, said_write, go_write):
                    os.close(fd)
                os.read(go_read, 1)  # until the parent holds its pidfd
                os._exit(0)
            os.write(said_write, str(orphan).encode())
        finally:
            os._exit(0)
    os.close(said_write)
    os.close(go_read)
    pidfd = -1
    try:
        told = os.read(said_read, 32)
        os.waitpid(middle, 0)  # the test process is an orphan now, the init's
        if not told:
            return True
        pidfd = os.pidfd_open(int(told))
    except OSError:
        return True
    finally:
        os.close(said_read)
        os.close(go_write)  # the test process ends
    try:
        waiting = select.poll()
        waiting.register(pidfd, select.POLLIN)
        if not waiting.poll(int(ORPHAN_ENDS_WITHIN * 1000)):
            # Not even ended (a loaded machine): adopted, the way that fails harmless
            # (a reaping init's escapees kept) rather than a zombie a call.
            return False
        deadline = time.monotonic() + INIT_REAPS_WITHIN
        while time.monotonic() < deadline:
            try:
                signal.pidfd_send_signal(pidfd, 0)  # answered until it is reaped
            except ProcessLookupError:
                return True
            time.sleep(0.005)
        return False
    except OSError:
        return True
    finally:
        os.close(pidfd)


def disown_orphans() -> None:
    """Undo `adopt_orphans` before this process becomes another program (the setting
    survives an exec): a runner exec'd in place is not made a reaper."""
    if _adopted:
        import ctypes

        if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) == 0:
            _adopted.clear()


def reaps_orphans() -> bool:
    """Whether orphaned processes come to this process: it is its PID namespace's init,
    and /proc numbers processes as it does (one mounted for another namespace would
    name others by the numbers read here: nothing is reaped then), or `adopt_orphans`
    made it a subreaper (with /proc as its own too). A subreaper the embedder made it
    cannot be told without `prctl`; it has chosen to reap."""
    me = os.getpid()
    if not _adopted and me != 1:
        return False
    try:
        return os.readlink("/proc/self") == str(me)
    except OSError:
        return False


def group_left(pgid: int) -> bool:
    """Whether any process of group `pgid`, live or a zombie, is left."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _children() -> list[int]:
    """This process's children: its main thread's list, where the kernel puts the
    orphans it hands an init (whichever thread made their ancestors); every process
    whose parent is this one where the kernel keeps no such list."""
    me = os.getpid()
    try:
        with open(f"/proc/{me}/task/{me}/children", "rb") as listing:
            return [int(pid) for pid in listing.read().split()]
    except OSError:
        pass
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and _facts(int(name)) is not None:
            found.append(int(name))
    return found


def stat_fields(pid: int) -> list[bytes] | None:
    """The fields of `/proc/PID/stat` after the command's name (state first, then
    parent, process group, ...); None when it is gone or unreadable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat_file:
            return stat_file.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _facts(pid: int) -> tuple[bytes, int, int] | None:
    """(state, parent, process group) of `pid`, or None when it is not this process's
    child (or gone)."""
    fields = stat_fields(pid)
    if fields is None:
        return None
    state, parent, group = fields[0], int(fields[1]), int(fields[2])
    return (state, parent, group) if parent == os.getpid() else None


def reap_group_zombies(pgid: int) -> int:
    """Reap each zombie child of this process whose process group is `pgid` (a call's,
    once no live member is left: their orphans have come here by then); how many.
    Each is pinned by a pidfd before it is judged, so what is reaped is what was
    judged: a number reused meanwhile names another process, which the pidfd does not."""
    reaped = 0
    for pid in _children():
        # The group's leader is the call's own, reaped by its waiter already: a process
        # with its number now leads a new group (another call's, the embedder's child),
        # whose status is its own waiter's. Its members, orphans like the call's, are not.
        if pid == pgid:
            continue
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            continue
        try:
            facts = _facts(pid)
            if facts is None or facts[0] != b"Z" or facts[2] != pgid:
                continue
            if os.waitid(_P_PIDFD, pidfd, os.WEXITED | os.WNOHANG) is not None:
                reaped += 1
        except OSError:
            pass  # reaped by another waiter meanwhile (ECHILD)
        finally:
            os.close(pidfd)
    return reaped


# How long the pinned processes of a call's cgroup are given to become zombies once they
# have left it (a process leaves its cgroup's list as its last thread exits, before the
# kernel has made it a zombie: a large or many-threaded one takes a moment).
PINNED_WAIT = 1.0


def reap_pinned(pidfds: list[int]) -> int:
    """Reap those of `pidfds` (processes a call's cgroup held, pinned while alive and
    killed since) that are ended children of this process, and close every one; how
    many were reaped. A pidfd names one process for good: none is another's child. Each
    is given PINNED_WAIT (in all) to end: a pidfd reads as ready once its process has."""
    waiting = select.poll()
    for pidfd in pidfds:
        waiting.register(pidfd, select.POLLIN)
    deadline = time.monotonic() + PINNED_WAIT
    running = len(pidfds)
    while running and (left := deadline - time.monotonic()) > 0:
        for pidfd, _ in waiting.poll(int(left * 1000) + 1):
            waiting.unregister(pidfd)
            running -= 1
    reaped = 0
    for pidfd in pidfds:
        try:
            if os.waitid(_P_PIDFD, pidfd, os.WEXITED | os.WNOHANG) is not None:
                reaped += 1
        except OSError:
            pass  # not ours (ECHILD): its parent, or the host's init, reaps it
        finally:
            os.close(pidfd)
    return reaped
