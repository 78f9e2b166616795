"""A command's leader process, started from the event loop's own thread: what the executor
needs of `trio.Process`, without trio's worker-thread hop for every spawn.

`subprocess.Popen` runs inline. With no `preexec_fn` the standard library starts the child
with vfork, so the loop waits only until the child has exec'd (about what the hop itself
cost: 0.2 ms a call, measured in docs/performance.md). A child's PR_SET_PDEATHSIG follows
the thread that forked it; from the loop's thread that is the harness's own lifetime, not
a worker's that retires when idle.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import weakref
from collections.abc import Sequence
from typing import Any

import trio

# How often a kernel without pidfds (before Linux 5.3) is asked whether the leader exited.
_POLL_WITHOUT_PIDFD = 0.005


class Child:
    """One started process. `pidfd` (None on kernels without them) names it for good: it
    is opened before anything can reap the leader, and `wait_exited` waits on it without
    reaping, so the process group's id stays this process's until `wait` reaps it."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        stdin: trio.lowlevel.FdStream | None,
        stdout: trio.abc.ReceiveStream | None,
        stderr: trio.abc.ReceiveStream | None,
    ) -> None:
        self._popen = popen
        self.args = popen.args
        self.pid = popen.pid
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.pidfd: int | None = None
        with contextlib.suppress(OSError):  # no pidfds: `wait_exited` polls
            self.pidfd = os.pidfd_open(popen.pid)
        self._finalizer = (
            None if self.pidfd is None else weakref.finalize(self, os.close, self.pidfd)
        )

    def __repr__(self) -> str:
        return f"<Child {self.pid} {self.args!r}: returncode {self._popen.returncode}>"

    @property
    def returncode(self) -> int | None:
        """The exit status once reaped (negative: the signal), else None. Reading it
        reaps an exited leader, as `subprocess.Popen.poll` does."""
        return self._popen.poll()

    def poll(self) -> int | None:
        return self._popen.poll()

    @property
    def reaped(self) -> bool:
        """Whether it was reaped (its pid, and so its group's id, may be another's now);
        unlike `returncode`, asking does not reap."""
        return self._popen.returncode is not None

    async def wait_exited(self) -> None:
        """Until the leader has exited; it is NOT reaped (a zombie keeps its pid)."""
        if self.pidfd is not None:
            await trio.lowlevel.wait_readable(self.pidfd)
            return
        # No event says a process exited on such kernels (SIGCHLD is the harness's).
        while not _exited_unreaped(self.pid) and self._popen.returncode is None:  # noqa: ASYNC110
            await trio.sleep(_POLL_WITHOUT_PIDFD)

    async def wait(self) -> int:
        """Until the leader has exited, then reap it: its exit status."""
        code = self._popen.poll()
        if code is None:
            await self.wait_exited()
            code = self._popen.wait()
        self.close_pidfd()
        return code

    def close_pidfd(self) -> None:
        if self._finalizer is not None and self.pidfd is not None:
            trio.lowlevel.notify_closing(self.pidfd)
            self._finalizer()
            self.pidfd = None

    def send_signal(self, signum: int) -> None:
        """Send `signum` to the leader, through its pidfd while that is open; nothing
        once it was reaped (its pid may be another's). It never reaps: Popen's own
        `send_signal` polls first, which would reap an exited leader and let its group's
        id go before `settle` signals the group."""
        with contextlib.suppress(ProcessLookupError):
            if self.pidfd is not None:
                signal.pidfd_send_signal(self.pidfd, signum)
            elif not self.reaped:
                os.kill(self.pid, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def _exited_unreaped(pid: int) -> bool:
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True  # reaped meanwhile
    return info is not None


def start_child(
    argv: Sequence[str], *, stdin: Any, stdout: Any, stderr: Any, **options: Any
) -> Child:
    """Start `argv` as `subprocess.Popen(argv, **options)` would, in this thread. Each of
    stdin, stdout and stderr given as `subprocess.PIPE` becomes a trio stream on our end
    (the child's end is closed here once it has its copy, so its exit ends the pipe);
    anything else is passed on as it is."""
    ours: dict[str, int] = {}
    theirs: list[int] = []
    try:
        if stdin == subprocess.PIPE:
            stdin, ours["stdin"] = os.pipe()
            theirs.append(stdin)
        if stdout == subprocess.PIPE:
            ours["stdout"], stdout = os.pipe()
            theirs.append(stdout)
        if stderr == subprocess.PIPE:
            ours["stderr"], stderr = os.pipe()
            theirs.append(stderr)
        popen = subprocess.Popen(list(argv), stdin=stdin, stdout=stdout, stderr=stderr, **options)
    except BaseException:
        for fd in ours.values():
            os.close(fd)
        raise
    finally:
        for fd in theirs:
            os.close(fd)
    streams = {name: trio.lowlevel.FdStream(fd) for name, fd in ours.items()}
    return Child(popen, streams.get("stdin"), streams.get("stdout"), streams.get("stderr"))
