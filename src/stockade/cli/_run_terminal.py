"""`stockade run` on a person's terminal: the command runs on a pseudo-terminal of its own.

Owns opening it (the person's modes and window size copied), the person's terminal
in raw mode while the command runs (restored on every way out), typed input, window
size changes and Ctrl-Z (docs/executor.md, "stockade run", "On a terminal").
"""

from __future__ import annotations

import contextlib
import os
import signal
import termios
import tty
from collections.abc import AsyncIterator
from typing import Any

import attrs
import trio

from ..executor import READ_SIZE, Terminal, signal_group
from ..reprs import fields_repr

# Ctrl-Z: how long a program that handles SIGTSTP itself (an editor putting its screen
# back) has before its group is stopped.
SUSPEND_GRACE = 0.05
# Put before the command when stockade's stderr is the same terminal: the command's
# shell moves its stderr onto the pty too, as on any terminal (one stream, in order,
# what `bash -i` and `less` expect of fd 2); the runner's own stderr stays the pipe,
# so a runner failure is still told from the command's output.
MERGE_STDERR = "exec 2>&1; "


def typing_reaches_the_command() -> bool:
    """Whether what the person types goes to the command: stdin is a terminal and
    stockade is its foreground job (in the background it would only be stopped)."""
    try:
        return os.isatty(0) and os.tcgetpgrp(0) == os.getpgrp()
    except OSError:
        return False


def same_terminal(fd: int, other: int) -> bool:
    """Whether `fd` and `other` are one terminal (stderr and stdout: the command's
    stderr goes onto its terminal too, MERGE_STDERR)."""
    try:
        if not (os.isatty(fd) and os.isatty(other)):
            return False
        return os.fstat(fd).st_rdev == os.fstat(other).st_rdev
    except OSError:
        return False


@attrs.define(eq=False)
class _Person:
    """The person's terminal (`fd`) and the command's terminal's `master`."""

    __repr__ = fields_repr

    fd: int
    typing: bool
    master: int
    sender: trio.lowlevel.FdStream | None = None
    # The person's modes while stockade holds the terminal raw.
    saved: list[Any] | None = None
    # The person typed the command's interrupt key (Ctrl-C) while it was a signal.
    interrupted: bool = False

    def raw(self) -> None:
        if not self.typing:
            return
        with contextlib.suppress(termios.error, OSError):
            if os.tcgetpgrp(self.fd) != os.getpgrp():
                # In the background (continued by `bg`, or by `kill %1` on its way to
                # end): changing the terminal would only stop stockade again.
                return
            modes = termios.tcgetattr(self.fd)
            # Every key goes to the command's terminal, which echoes, edits lines and
            # turns Ctrl-C into SIGINT; stockade's side only passes bytes on.
            tty.setraw(self.fd, termios.TCSANOW)
            if self.saved is None:
                self.saved = modes

    def restore(self) -> None:
        if self.saved is None:
            return
        with contextlib.suppress(termios.error, OSError):
            termios.tcsetattr(self.fd, termios.TCSADRAIN, self.saved)
        self.saved = None

    def resize(self) -> None:
        """The command's terminal takes the person's size (a change signals SIGWINCH to
        the command's foreground group)."""
        with contextlib.suppress(termios.error, OSError):
            termios.tcsetwinsize(self.master, termios.tcgetwinsize(self.fd))

    async def follow(self, signals: Any) -> None:
        async for signum in signals:
            if signum == signal.SIGCONT:  # resumed after a stop from outside
                self.raw()
            self.resize()

    async def type_in(self) -> None:
        """The person's keys, into the command's terminal, until the terminal ends."""
        assert self.sender is not None
        while True:
            await trio.lowlevel.wait_readable(self.fd)
            try:
                data = os.read(self.fd, READ_SIZE)
            except BlockingIOError:
                continue
            except OSError:
                return  # hung up
            if not data:
                return
            while data:
                keys = self._signal_keys()
                interrupt, suspend = keys.get(termios.VINTR), keys.get(termios.VSUSP)
                self.interrupted = self.interrupted or (interrupt is not None and interrupt in data)
                cut = data.find(suspend) if suspend is not None else -1
                if cut < 0:
                    await self.sender.send_all(data)
                    break
                # The key itself too: the command's terminal echoes it (^Z) and gives
                # SIGTSTP to programs that handle it.
                await self.sender.send_all(data[: cut + 1])
                data = data[cut + 1 :]
                await self.suspend()

    def _signal_keys(self) -> dict[int, bytes]:
        """The command's terminal's keys that its modes make signals (Ctrl-C, Ctrl-Z),
        by their `termios` index; none when it reads every key itself (an editor)."""
        try:
            modes = termios.tcgetattr(self.master)
        except termios.error:
            return {}
        if not modes[3] & termios.ISIG:
            return {}
        keys = {index: modes[6][index] for index in (termios.VINTR, termios.VSUSP)}
        # A disabled key reads as NUL (_POSIX_VDISABLE).
        return {index: key for index, key in keys.items() if key not in (b"\0", 0)}

    def _leaders_group(self) -> int | None:
        """The command's terminal's foreground group when it is the session leader's:
        the command's own group, the one the executor kills (None otherwise, and once
        the command's session has ended)."""
        try:
            group = os.tcgetpgrp(self.master)
            if group <= 0 or group == os.getpgrp() or os.getsid(group) != group:
                return None
        except OSError:
            return None
        return group

    async def suspend(self) -> None:
        """Ctrl-Z, as a shell's job: the command stops, then stockade (its shell says
        "Stopped"); `fg` continues both. The kernel would stop neither: the command's
        group is orphaned (its leader's parent, stockade, is in another session), and
        stockade, holding the terminal raw, got no signal. A job of a shell inside (its
        own group in the foreground, not the session leader's) is the kernel's to stop
        and that shell's to report, as on any terminal: stockade leaves it alone."""
        group = self._leaders_group()
        if group is None:
            return
        await trio.sleep(SUSPEND_GRACE)
        signal_group(group, signal.SIGSTOP)
        self.restore()
        # Stops stockade's job when a shell with job control runs it; an orphaned job
        # (no such shell) discards it, as the kernel discards Ctrl-Z there.
        signal_group(os.getpgrp(), signal.SIGTSTP)
        self.raw()
        self.resize()
        signal_group(group, signal.SIGCONT)


@attrs.frozen
class CommandTerminal:
    """What `command_terminal` gives: the executor's `Terminal`, and whether the person
    interrupted the command (read once it has ended)."""

    __repr__ = fields_repr

    terminal: Terminal
    _person: _Person

    @property
    def interrupted(self) -> bool:
        return self._person.interrupted


@contextlib.asynccontextmanager
async def command_terminal(*, typing: bool) -> AsyncIterator[CommandTerminal | None]:
    """A pseudo-terminal for the command's stdout (and stdin when `typing`), with the
    person's modes and window size; while inside, the person's terminal is raw (when
    `typing`) and its keys and size changes are passed on. None when the system has
    no pty to give (then the command gets pipes, as off a terminal)."""
    fd = 0 if typing else 1
    try:
        master, slave = os.openpty()
    except OSError:
        yield None
        return
    with contextlib.suppress(termios.error, OSError):
        termios.tcsetattr(slave, termios.TCSANOW, termios.tcgetattr(fd))
    with contextlib.suppress(termios.error, OSError):
        termios.tcsetwinsize(slave, termios.tcgetwinsize(fd))
    terminal = Terminal(slave=slave, master=master, stdin=typing)
    person = _Person(fd=fd, typing=typing, master=master)
    try:
        # What the run raised, raised again outside the helpers' nursery: as itself,
        # not inside an exception group (the caller's handlers match its type).
        raised: BaseException | None = None
        with trio.open_signal_receiver(signal.SIGWINCH, signal.SIGCONT) as signals:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(person.follow, signals)
                if typing:
                    person.sender = trio.lowlevel.FdStream(os.dup(master))
                    person.raw()
                    nursery.start_soon(person.type_in)
                try:
                    yield CommandTerminal(terminal, person)
                except BaseException as error:  # every kind, raised again below
                    raised = error
                finally:
                    nursery.cancel_scope.cancel()
        if raised is not None:
            raise raised
    finally:
        person.restore()
        terminal.release()
        if person.sender is not None:
            with trio.CancelScope(shield=True):
                await person.sender.aclose()
        with contextlib.suppress(OSError):
            os.close(master)
