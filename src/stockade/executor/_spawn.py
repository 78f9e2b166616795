"""Spawn, drain and kill one command's process group, on Trio.

Every process gets its own session (so its group can be signalled as one), stdin
closed unless given, and bounded output buffers; nothing outlives `settle`. A
foreground caller may attach `Streams`: each output chunk is handed on as it arrives
(besides the bounded capture), and stdin is pumped from the caller's source; or give
the command a pseudo-terminal it opened (`Terminal`) in place of the pipes.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import re
import signal
import socket
import subprocess
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, cast

import attrs
import trio

from ..errors import CommandStartError

# A foreground caller's streams ride in its message (`AttachedRun`), so they are
# defined with it; named here too for the callers that drive them (`cli.run`).
from ..messages import Sink as Sink
from ..messages import Source as Source
from ..messages import Streams as Streams
from ..messages import Terminal as Terminal
from ..modes import SpawnTrait
from ..sandbox import has_filter_stage, namespace_init, reap_orphaned_init, started_option_at
from ._buffer import OutputBuffer
from ._child import Child, start_child
from ._orphans import group_left, reap_group_zombies, reaps_orphans, stat_fields

READ_SIZE = 65536
# After the leader exits and its group is killed, pipes reach EOF at once; a process
# that escaped the group (setsid) could hold them open, so stop reading after this.
DRAIN_GRACE = 0.5
# A killed command (cancelled, timed out by the caller, its session closed): its
# processes are gone when its pipes end. Under bwrap the PID namespace's teardown
# ends them, but on a loaded machine that can take longer than DRAIN_GRACE, and the
# caller was promised "gone when this returns": wait longer, still bounded, for an
# escaped process that holds the pipes and will not end.
KILL_TEARDOWN = 5.0


class TerminalOutput(trio.abc.ReceiveStream):
    """The command's output as a pty master gives it: its end is EIO (every slave end
    closed), read as the end of a pipe is. `as_written` undoes the terminal's \r\n for
    \n, for the capture that classification reads (the sink gets the bytes as the
    terminal shows them)."""

    def __init__(self, master: int) -> None:
        self._stream = trio.lowlevel.FdStream(os.dup(master))
        self._held = b""

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        try:
            return await read_pipe(self._stream, READ_SIZE if max_bytes is None else max_bytes)
        except trio.BrokenResourceError:
            return b""

    def fileno(self) -> int:
        return self._stream.fileno()

    def close(self) -> None:
        self._stream.close()

    async def aclose(self) -> None:
        await self._stream.aclose()

    def as_written(self, chunk: bytes) -> bytes:
        """`chunk` for the capture; a \r that ends it waits for the next (b"": the end)."""
        data, self._held = self._held + chunk, b""
        if chunk and data.endswith(b"\r"):
            data, self._held = data[:-1], b"\r"
        return data.replace(b"\r\n", b"\n")


async def read_pipe(pipe: trio.lowlevel.FdStream, max_bytes: int) -> bytes:
    """`pipe.receive_some(max_bytes)`, with fewer trips through the event loop.

    trio's own passes through the scheduler before every read; this reads at once
    and waits only when the read would block. A chunk is followed by a schedule
    point (shielded: the chunk is never lost to a cancellation), so a writer that
    never pauses cannot starve the loop; the end of the pipe (b"") returns without
    one. It is a cancellation point as trio's is: a cancelled caller reads nothing.
    Errors as trio's: closed (before or while waiting) ClosedResourceError, any
    other failure BrokenResourceError. The descriptor is asked for on each pass:
    the stream may have been closed meanwhile (-1: EBADF)."""
    if max_bytes < 1:
        raise ValueError("max_bytes must be integer >= 1")
    await trio.lowlevel.checkpoint_if_cancelled()
    while True:
        fd = pipe.fileno()
        try:
            data = os.read(fd, max_bytes)
        except BlockingIOError:
            await trio.lowlevel.wait_readable(fd)
            continue
        except OSError as error:
            if error.errno == errno.EBADF:
                raise trio.ClosedResourceError("file was already closed") from None
            raise trio.BrokenResourceError from error
        if data:
            await trio.lowlevel.cancel_shielded_checkpoint()
        return data


async def _receive(stream: trio.abc.ReceiveStream, max_bytes: int) -> bytes:
    """The next chunk of `stream`: a pipe's (and a terminal's) read directly."""
    if isinstance(stream, trio.lowlevel.FdStream):
        return await read_pipe(stream, max_bytes)
    # A ReceiveStream may give a bytearray; these (pipes, a pty) give bytes.
    return cast(bytes, await stream.receive_some(max_bytes))


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
    env: Mapping[str, str],
    with_stdin: bool,
    info_fd: bool = False,
    terminal: Terminal | None = None,
    runner_at: int = 0,
    traits: frozenset[SpawnTrait] = frozenset(),
) -> Child:
    """Start `argv` directly (no shell) as the leader of a new session (with
    `terminal`: on it, which becomes the session's controlling terminal), with `env`
    as its whole environment (the environment policy's result: nothing else leaks in).

    `info_fd` (the runner's INFO_FD trait: bwrap): the runner is asked for its
    `--info-fd` report, which names the init of the sandbox's PID namespace, so
    `settle` can wait for that namespace's end (the runner exits as soon as its
    command has, while the kernel still ends the rest). `runner_at`: where in argv the
    runner's own argv starts, after a launcher's prefix.

    Started from the event loop's thread (`_child`): trio's `open_process` forked from
    a worker thread, and a child's PR_SET_PDEATHSIG (bwrap's --die-with-parent, the
    launcher's) follows the THREAD that forked it, so a worker retiring after 10 s idle
    SIGKILLed every confined command it had started (FACTS.md's 3,000-job mystery;
    tests/executor/test_long_commands.py). The loop's thread lives as long as the
    harness."""
    environment = dict(env)
    passed: tuple[int, ...] = ()
    report: int | None = None
    write_end: int | None = None
    told: int | None = None
    tells: int | None = None
    output = None
    # Every descriptor made inside: one that cannot be made (EMFILE) closes those
    # made before it, and the terminal is given back all the same.
    try:
        if info_fd:
            report, write_end = os.pipe()
            os.set_blocking(report, False)
            at = runner_at + 1
            argv = (*argv[:at], "--info-fd", str(write_end), *argv[at:])
            passed += (write_end,)
        # The launcher that execs the command says here that it does (`command_started`).
        option_at = started_option_at(argv[runner_at:], traits)
        if option_at is not None:
            ends = socket.socketpair()
            told, tells = ends[0].detach(), ends[1].detach()
            os.set_blocking(told, False)
            at = runner_at + option_at
            argv = (*argv[:at], "--started-fd", str(tells), *argv[at:])
            passed += (tells,)
        stdio: dict[str, Any] = {
            "stdin": subprocess.PIPE if with_stdin else subprocess.DEVNULL,
            "stdout": subprocess.PIPE,
            "stderr": subprocess.PIPE,
        }
        if terminal is not None:
            stdio = _on_terminal(
                stdio, terminal, hold_signals=info_fd and has_filter_stage(argv[runner_at:])
            )
            # Before the start (its dup may fail, EMFILE): a failure after it would
            # leave the command running with nobody to settle it.
            output = TerminalOutput(terminal.master)
        process = start_child(
            argv,
            cwd=cwd,
            env=environment,
            start_new_session=True,
            close_fds=True,
            pass_fds=passed,
            **stdio,
        )
    except BaseException:
        if report is not None:
            os.close(report)
        if told is not None:
            os.close(told)
        if output is not None:
            output.close()
        raise
    finally:
        if write_end is not None:
            os.close(write_end)
        if tells is not None:
            os.close(tells)
        if terminal is not None:
            terminal.release()
    if output is not None:
        # The stream its output arrives on: the master, not a pipe of its own.
        process.stdout = output
    if report is not None:
        # Closed by `settle`, or with the process object if it never settles.
        _kept_for(process, report, _INIT_REPORTS)
    if told is not None:
        _kept_for(process, told, _STARTED)
    return process


# A descriptor read once a process has settled, process -> (it, its finalizer): the
# caller's end of the launcher's --started-fd socket, the read end of bwrap's --info-fd.
if TYPE_CHECKING:
    _Kept = weakref.WeakKeyDictionary[Child, tuple[int, weakref.finalize[[int], Child]]]
# Closed by `command_started`, or with the process object if it never settles.
_STARTED: _Kept = weakref.WeakKeyDictionary()


def _kept_for(process: Child, descriptor: int, kept: _Kept) -> None:
    kept[process] = (descriptor, weakref.finalize(process, os.close, descriptor))


def _read_kept(process: Child, kept: _Kept, size: int) -> bytes | None:
    """What `process`'s descriptor in `kept` holds now (b"" when nothing), then
    closed; None when it has none."""
    entry = kept.pop(process, None)
    if entry is None:
        return None
    descriptor, finalizer = entry
    finalizer.detach()
    try:
        return os.read(descriptor, size)
    except OSError:  # EAGAIN: nothing written
        return b""
    finally:
        os.close(descriptor)


def command_started(process: Child) -> bool | None:
    """Whether the launcher that execs `process`'s command said it started it: True
    (whatever the command then wrote: a line like the runner's failure is its own),
    False (it never got that far), None (no launcher of its argv says either). Read
    once the process has settled: the word is in the socket by then. No process but
    the launcher ever held the other end: the command cannot take the word back."""
    said = _read_kept(process, _STARTED, 1)
    return None if said is None else said == b"1"


async def leader_exited(process: Child) -> None:
    """Until `process` has exited, NOT reaped: `settle` signals the group while the
    leader is a zombie, as until it is reaped its pid, and so the group's id, cannot be
    given to a new process. Signalled after the reap, a busy host (3,000 jobs, pid_max
    32,768) had handed the number to another job's group, which died of a SIGKILL
    nobody meant for it (FACTS.md: exit 137, no output, not timed out)."""
    await process.wait_exited()


async def reap(process: Child) -> None:
    """Reap the exited leader, which lets its pid (the group's id) go: after this,
    nothing may signal the group by that number. One that has exited (a zombie) is
    reaped at once, without a trip through the event loop; only one that has not
    (SIGKILLed a moment ago) is waited for."""
    if process.poll() is None:
        with trio.CancelScope(shield=True):  # ending already: this does not block long
            await process.wait()
    process.close_pidfd()


# bwrap's --info-fd reports not read yet (`_namespace_init`).
_INIT_REPORTS: _Kept = weakref.WeakKeyDictionary()


def _namespace_init(process: Child) -> int | None:
    """A pidfd of the init of `process`'s PID namespace (bwrap's report: `{"child-pid":
    N, ...}`, written and closed once the init is made); None without one, or when it
    is gone already (reaped: so is its namespace). Read once the leader has exited:
    the report is in its pipe by then, and nothing else is read from it."""
    text = _read_kept(process, _INIT_REPORTS, 4096)
    return None if text is None else namespace_init(text)


async def _namespace_gone(process: Child) -> None:
    """Until the PID namespace `process` (bwrap) made has ended: its init ends only
    once the kernel has ended every process left in it. Bounded by KILL_TEARDOWN."""
    pidfd = _namespace_init(process)
    if pidfd is None:
        return
    try:
        with trio.move_on_after(KILL_TEARDOWN):
            await trio.lowlevel.wait_readable(pidfd)
        reap_orphaned_init(pidfd)
    finally:
        os.close(pidfd)


# The terminal's signals that end a process by default, which a runner's own processes
# must not take in the command's place (Ctrl-C, Ctrl-\).
TERMINAL_SIGNALS = frozenset({signal.SIGINT, signal.SIGQUIT})


def _on_terminal(
    stdio: dict[str, Any], terminal: Terminal, *, hold_signals: bool
) -> dict[str, Any]:
    import fcntl
    import termios

    stdio = {**stdio, "stdout": terminal.slave}
    if terminal.stdin:
        stdio["stdin"] = terminal.slave
    # In the child, after its setsid: fd 1 (the pty, nobody's terminal yet) becomes the
    # new session's controlling terminal, so Ctrl-C, SIGWINCH and /dev/tty work inside.
    # A C function with int arguments: nothing the forked child could deadlock on.
    take = partial(fcntl.ioctl, 1, termios.TIOCSCTTY, 0)
    stdio["preexec_fn"] = take
    if hold_signals:
        # bwrap, the session leader, shares the terminal's foreground group with the
        # command and would die of Ctrl-C or Ctrl-\ (its sandbox with it) before the
        # command could handle it: it holds them blocked, and its filter stage
        # unblocks them for the command alone (docs/backends.md, "The terminal's
        # signals"). A frame that calls two C functions, their arguments bound before
        # the fork: no import, no lock taken in the child.
        hold = partial(signal.pthread_sigmask, signal.SIG_BLOCK, TERMINAL_SIGNALS)
        stdio["preexec_fn"] = partial(_both, take, hold)
    return stdio


def _both(first: Callable[[], object], second: Callable[[], object]) -> None:
    first()
    second()


def signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


async def terminate_group(process: Child, grace: float) -> None:
    """SIGTERM the whole group, SIGKILL it after `grace`, and reap the leader (last:
    the group is signalled by the leader's pid, which is ours only until then)."""
    if not process.reaped:  # the group's id is still its leader's
        signal_group(process.pid, signal.SIGTERM)
        with trio.move_on_after(grace):
            await leader_exited(process)
        signal_group(process.pid, signal.SIGKILL)
    await reap(process)


@attrs.define(eq=False, repr=False)
class _Grace:
    """How long the pipes are still read once the leader has exited: DRAIN_GRACE, not
    counting the time a sink spent handing output on (a pager that reads slowly must
    not lose the tail of what the command wrote before it exited)."""

    deadline: float = math.inf
    # Read after the grace without waiting, at most: the largest a pipe can be made
    # without privilege (/proc/sys/fs/pipe-max-size's default).
    leftover: int = 1 << 20
    _waits: set[trio.CancelScope] = attrs.field(factory=set)

    def start(self) -> None:
        self.deadline = trio.current_time() + DRAIN_GRACE
        for scope in self._waits:
            scope.deadline = self.deadline

    def credit(self, seconds: float) -> None:
        self.deadline += seconds  # inf stays inf while the leader runs

    async def receive(self, stream: trio.abc.ReceiveStream) -> bytes:
        """The next chunk; b"" at the end of the pipe or of the grace.

        When the grace is over, what the command wrote before it ended is still taken,
        without waiting: it sits in the pipe already, and a loop that was starved for
        the whole grace (a loaded machine) must not lose it. Bounded by the most a
        pipe can hold, so a process that escaped and keeps writing cannot hold us.
        """
        with trio.CancelScope(deadline=self.deadline) as waiting:
            self._waits.add(waiting)
            try:
                return await _receive(stream, READ_SIZE)
            finally:
                self._waits.discard(waiting)
        chunk = _ready(stream, min(READ_SIZE, self.leftover))
        self.leftover -= len(chunk)
        return chunk


def _ready(stream: trio.abc.ReceiveStream, size: int) -> bytes:
    """What can be read from `stream`'s pipe right now (b"" when nothing, or at EOF)."""
    fileno = getattr(stream, "fileno", None)
    if size <= 0 or fileno is None:
        return b""
    try:
        return os.read(fileno(), size)
    except OSError:  # EAGAIN: nothing there; EBADF: closed meanwhile
        return b""


async def _drain(
    stream: trio.abc.ReceiveStream | None,
    buffer: OutputBuffer,
    grace: _Grace,
    sink: Sink | None = None,
) -> None:
    # The stream stays open: after a cancellation, settle drains it once more.
    if stream is None:
        return
    terminal = stream if isinstance(stream, TerminalOutput) else None
    try:
        while chunk := await grace.receive(stream):
            buffer.write(chunk if terminal is None else terminal.as_written(chunk))
            if sink is None:
                continue
            began = trio.current_time()
            try:
                await sink(chunk)
            except BrokenPipeError:
                # The caller's reader is gone: close ours, so the command's next
                # write meets a closed pipe (SIGPIPE), as in a shell pipeline.
                await stream.aclose()
                return
            grace.credit(trio.current_time() - began)
    except trio.ClosedResourceError:
        return  # closed above, on an earlier pass
    if terminal is not None:
        buffer.write(terminal.as_written(b""))


async def _drain_both(
    process: Child,
    stdout: OutputBuffer,
    stderr: OutputBuffer,
    grace: _Grace | None = None,
    streams: Streams | None = None,
) -> None:
    async with trio.open_nursery() as pipes:
        _start_drains(pipes, process, stdout, stderr, grace or _Grace(), streams)


def _start_drains(
    nursery: trio.Nursery,
    process: Child,
    stdout: OutputBuffer,
    stderr: OutputBuffer,
    grace: _Grace,
    streams: Streams | None,
) -> None:
    out, err = (None, None) if streams is None else (streams.stdout, streams.stderr)
    nursery.start_soon(_drain, process.stdout, stdout, grace, out)
    nursery.start_soon(_drain, process.stderr, stderr, grace, err)


async def _feed(stream: trio.abc.SendStream | None, data: bytes) -> None:
    if stream is None:
        return
    async with stream:
        # A command that stops reading gets what it read; that is not an error.
        with contextlib.suppress(trio.BrokenResourceError):
            await stream.send_all(data)


async def _pump(stream: trio.abc.SendStream | None, source: Source) -> None:
    """Copy `source` into the command's stdin until either side ends; then close it."""
    if stream is None:
        return
    async with stream:
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            while chunk := await source():
                await stream.send_all(chunk)


async def settle(
    process: Child,
    stdout: OutputBuffer,
    stderr: OutputBuffer,
    *,
    stdin: bytes | None,
    time_limit: float | None,
    kill_grace: float,
    streams: Streams | None = None,
) -> bool:
    """Drain the pipes until the command is done; True when it timed out.

    On timeout the group gets SIGTERM then SIGKILL; on cancellation the same happens
    shielded, then the cancellation propagates. When the leader exits on its own,
    what is left of its group is killed, so no orphan survives the call. Either way
    the pipes are read to their end (bounded by DRAIN_GRACE; KILL_TEARDOWN when
    killed): their end is the sign that every process holding them is gone.
    `streams` (a foreground caller's) get the output live; its stdin pump stops when
    the command is done.
    """
    timed_out = False
    grace = _Grace()
    # The input's own scope: cancelling a nursery's scope would cancel the code inside
    # its block too, and with it the kill below.
    feeding = trio.CancelScope()

    async def feed(send: Callable[[], Awaitable[None]]) -> None:
        with feeding:
            await send()

    try:
        async with trio.open_nursery() as pipes:
            # The drains run in this nursery itself: a nursery of their own cost the
            # call two more trips through the event loop (its task's start and end).
            _start_drains(pipes, process, stdout, stderr, grace, streams)
            if stdin is not None:
                pipes.start_soon(feed, partial(_feed, process.stdin, stdin))
            elif streams is not None and streams.stdin is not None:
                pipes.start_soon(feed, partial(_pump, process.stdin, streams.stdin))
            with trio.move_on_after(math.inf if time_limit is None else time_limit) as deadline:
                await leader_exited(process)
            # Input nobody will read: a source that never ends must not hold us here.
            feeding.cancel()
            if deadline.cancelled_caught:
                timed_out = True
                await terminate_group(process, kill_grace)
            else:
                # The leader is a zombie until `reap`: the group's id is still its own
                # (asked, not assumed: nothing else may have reaped it meanwhile).
                if not process.reaped:
                    signal_group(process.pid, signal.SIGKILL)
                await reap(process)
            grace.start()
    except BaseException:
        with trio.CancelScope(shield=True):
            await terminate_group(process, kill_grace)
            with trio.move_on_after(KILL_TEARDOWN):
                await _drain_both(process, stdout, stderr)
                await _group_gone(process.pid)
            await _namespace_gone(process)
            await _orphans_reaped(process.pid)
            await _close(process)
        raise
    if timed_out:
        with trio.move_on_after(KILL_TEARDOWN):
            await _group_gone(process.pid)
    # What the command left in its PID namespace (setsid, a double fork: out of its
    # group) is gone too before the call returns.
    await _namespace_gone(process)
    await _orphans_reaped(process.pid)
    await _close(process)
    return timed_out


async def _orphans_reaped(pgid: int) -> None:
    """A harness that is its PID namespace's init, or made their reaper (`_orphans`):
    once every live process of the call's group `pgid` is gone, reap the zombies the
    group left it. Elsewhere, or when nothing of the group is left (every confined
    call: the launcher's or bwrap's init reaps inside), one check."""
    if not reaps_orphans() or not group_left(pgid):
        return
    with trio.move_on_after(KILL_TEARDOWN):
        await _group_gone(pgid)
    reap_group_zombies(pgid)


async def _group_gone(pgid: int) -> None:
    """Until no process of the killed group `pgid` is left. Its pipes end before that:
    a process closes its files early in its exit, and the last one out of a sandbox's
    namespaces tears them down after (under load, many milliseconds)."""
    while _group_alive(pgid):  # noqa: ASYNC110 (no event says a process group emptied)
        await trio.sleep(0.005)


def _group_alive(pgid: int) -> bool:
    """Whether a process of group `pgid` still runs (a zombie waiting for a parent
    that never reaps, as a container's bare init may be, does not count)."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    # Some member is left: a live one, or only zombies (kill() reaches those too).
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        fields = stat_fields(int(entry.name))
        if fields is not None and int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False


async def _close(process: Child) -> None:
    """Close the output pipes. A pipe's (and a terminal's) `close` is synchronous and
    tells trio (`notify_closing`) of any task still waiting on it; its `aclose` adds
    only a trip through the event loop per stream."""
    for stream in (process.stdout, process.stderr):
        if isinstance(stream, trio.lowlevel.FdStream | TerminalOutput):
            stream.close()
        elif stream is not None:
            await stream.aclose()


def exit_status(process: Child) -> int | None:
    """The shell's convention: a signal N death reads as 128 + N."""
    code = process.returncode
    if code is None:
        return None
    return 128 - code if code < 0 else code
