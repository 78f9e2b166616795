"""Spawn, drain and kill one command's process group, on Trio.

Every process gets its own session (so its group can be signalled as one), stdin
closed unless given, and bounded output buffers; nothing outlives `settle`.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import signal
import subprocess
from collections.abc import Mapping, Sequence

import trio

from ..errors import CommandStartError
from ._buffer import OutputBuffer

READ_SIZE = 65536
# After the leader exits and its group is killed, pipes reach EOF at once; a process
# that escaped the group (setsid) could hold them open, so stop reading after this.
DRAIN_GRACE = 0.5


ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def env_prefix(env: Mapping[str, str] | None) -> tuple[str, ...]:
    """`/usr/bin/env NAME=VALUE ...`, to set the caller's variables inside a sandbox."""
    if not env:
        return ()
    for name in env:
        if not ENV_NAME.match(name):
            raise CommandStartError(
                f"environment variable name {name!r} is not valid "
                "(letters, digits and underscores, not starting with a digit)"
            )
    return ("/usr/bin/env", *(f"{name}={value}" for name, value in env.items()))


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


async def terminate_group(process: trio.Process, grace: float) -> None:
    """SIGTERM the whole group, SIGKILL it after `grace`, and reap the leader."""
    signal_group(process.pid, signal.SIGTERM)
    with trio.move_on_after(grace):
        await process.wait()
    signal_group(process.pid, signal.SIGKILL)
    await process.wait()


async def _drain(stream: trio.abc.ReceiveStream | None, buffer: OutputBuffer) -> None:
    # The stream stays open: after a cancellation, settle drains it once more.
    if stream is None:
        return
    while chunk := await stream.receive_some(READ_SIZE):
        buffer.write(chunk)


async def _drain_both(process: trio.Process, stdout: OutputBuffer, stderr: OutputBuffer) -> None:
    async with trio.open_nursery() as pipes:
        pipes.start_soon(_drain, process.stdout, stdout)
        pipes.start_soon(_drain, process.stderr, stderr)


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
    what is left of its group is killed, so no orphan survives the call. Either way
    the pipes are read to their end (bounded by DRAIN_GRACE): their end is the sign
    that every process holding them is gone.
    """
    timed_out = False
    try:
        async with trio.open_nursery() as pipes:
            pipes.start_soon(_drain_both, process, stdout, stderr)
            if stdin is not None:
                pipes.start_soon(_feed, process.stdin, stdin)
            with trio.move_on_after(math.inf if time_limit is None else time_limit) as deadline:
                await process.wait()
            if deadline.cancelled_caught:
                timed_out = True
                await terminate_group(process, kill_grace)
            else:
                signal_group(process.pid, signal.SIGKILL)
            pipes.cancel_scope.deadline = trio.current_time() + DRAIN_GRACE
    except BaseException:
        with trio.CancelScope(shield=True):
            await terminate_group(process, kill_grace)
            with trio.move_on_after(DRAIN_GRACE):
                await _drain_both(process, stdout, stderr)
            await _close(process)
        raise
    await _close(process)
    return timed_out


async def _close(process: trio.Process) -> None:
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            await stream.aclose()


def exit_status(process: trio.Process) -> int | None:
    """The shell's convention: a signal N death reads as 128 + N."""
    code = process.returncode
    if code is None:
        return None
    return 128 - code if code < 0 else code
