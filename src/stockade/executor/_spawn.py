"""Spawn, drain and kill one command's process group, on Trio.

Every process gets its own session (so its group can be signalled as one), stdin
closed unless given, and bounded output buffers; nothing outlives `settle`.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence

import trio

from ._buffer import OutputBuffer

READ_SIZE = 65536
# After the leader exits and its group is killed, pipes reach EOF at once; a process
# that escaped the group (setsid) could hold them open, so stop reading after this.
DRAIN_GRACE = 0.5
GROUP_POLL = 0.005


async def spawn(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str] | None,
    with_stdin: bool,
) -> trio.Process:
    """Start `argv` directly (no shell) as the leader of a new session."""
    environment = None
    if env:
        environment = {**os.environ, **env}
    return await trio.lowlevel.open_process(
        list(argv),
        stdin=subprocess.PIPE if with_stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=environment,
        start_new_session=True,
        close_fds=True,
    )


def signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def wait_group_gone(pgid: int, limit: float) -> None:
    """Wait (at most `limit`) until no process of the group exists any more.

    SIGKILL is asynchronous: a killed process (bwrap's PID-namespace init, which
    takes the namespace down with it) may linger for a moment; callers are told the
    command is gone only once it is.
    """
    with trio.move_on_after(limit):
        while group_alive(pgid):  # noqa: ASYNC110 - the kernel offers no event for it
            await trio.sleep(GROUP_POLL)


async def terminate_group(process: trio.Process, grace: float) -> None:
    """SIGTERM the whole group, SIGKILL it after `grace`, reap the leader, wait it out."""
    signal_group(process.pid, signal.SIGTERM)
    with trio.move_on_after(grace):
        await process.wait()
    signal_group(process.pid, signal.SIGKILL)
    await process.wait()
    await wait_group_gone(process.pid, grace)


async def _drain(stream: trio.abc.ReceiveStream | None, buffer: OutputBuffer) -> None:
    if stream is None:
        return
    async with stream:
        while chunk := await stream.receive_some(READ_SIZE):
            buffer.write(chunk)


async def _feed(stream: trio.abc.SendStream | None, data: bytes) -> None:
    if stream is None:
        return
    async with stream:
        # A command that stops reading gets what it read; that is not an error.
        with contextlib.suppress(trio.BrokenResourceError):
            await stream.send_all(data)


async def settle(
    process: trio.Process,
    stdout: OutputBuffer,
    stderr: OutputBuffer,
    *,
    stdin: bytes | None,
    time_limit: float | None,
    kill_grace: float,
) -> bool:
    """Drain the pipes until the command is done; True when it timed out.

    On timeout the group gets SIGTERM then SIGKILL; on cancellation the same happens
    shielded, then the cancellation propagates. When the leader exits on its own,
    what is left of its group is killed, so no orphan survives the call.
    """
    timed_out = False
    async with trio.open_nursery() as pipes:
        pipes.start_soon(_drain, process.stdout, stdout)
        pipes.start_soon(_drain, process.stderr, stderr)
        if stdin is not None:
            pipes.start_soon(_feed, process.stdin, stdin)
        try:
            with trio.move_on_after(math.inf if time_limit is None else time_limit) as deadline:
                await process.wait()
            if deadline.cancelled_caught:
                timed_out = True
                await terminate_group(process, kill_grace)
            else:
                signal_group(process.pid, signal.SIGKILL)
                await wait_group_gone(process.pid, kill_grace)
        except BaseException:
            with trio.CancelScope(shield=True):
                await terminate_group(process, kill_grace)
            raise
        pipes.cancel_scope.deadline = trio.current_time() + DRAIN_GRACE
    return timed_out


def exit_status(process: trio.Process) -> int | None:
    """The shell's convention: a signal N death reads as 128 + N."""
    code = process.returncode
    if code is None:
        return None
    return 128 - code if code < 0 else code
