"""`stockade run` on a person's terminal: the command runs on pseudo-terminals of its own.

Owns opening them (the person's modes and window size copied), the person's terminal
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

from .executor._spawn import READ_SIZE, Terminal, signal_group

# Ctrl-Z: how long a program that handles SIGTSTP itself (an editor putting its screen
# back) has before its group is stopped.
SUSPEND_GRACE = 0.05


def typing_reaches_the_command() -> bool:
    """Whether what the person types goes to the command: stdin is a terminal and
    stockade is its foreground job (in the background it would only be stopped)."""
    try:
        return os.isatty(0) and os.tcgetpgrp(0) == os.getpgrp()
    except OSError:
        return False


@attrs.define(eq=False)
class _Person:
    """The person's terminal (`fd`) and the command's terminals' masters."""

    fd: int
    typing: bool
    masters: list[int]
    sender: trio.lowlevel.FdStream | None = None
    # The person's modes while stockade holds the terminal raw.
    saved: list[Any] | None = None
    # The person typed the command's interrupt key (Ctrl-C) while it was a signal.
    interrupted: bool = False

    def raw(self) -> None:
        if not self.typing:
            return
        with contextlib.suppress(termios.error, OSError):
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
        """The command's terminals take the person's size (a change signals SIGWINCH
        to the command's foreground group)."""
        with contextlib.suppress(termios.error, OSError):
            size = termios.tcgetwinsize(self.fd)
            for master in self.masters:
                termios.tcsetwinsize(master, size)

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
            modes = termios.tcgetattr(self.masters[0])
        except termios.error:
            return {}
        if not modes[3] & termios.ISIG:
            return {}
        keys = {index: modes[6][index] for index in (termios.VINTR, termios.VSUSP)}
        # A disabled key reads as NUL (_POSIX_VDISABLE).
        return {index: key for index, key in keys.items() if key not in (b"\0", 0)}

    async def suspend(self) -> None:
        """Ctrl-Z, as a shell's job: the command stops, then stockade (its shell says
        "Stopped"); `fg` continues both. The kernel would stop neither: the command's
        group is orphaned (its leader's parent, stockade, is in another session), and
        stockade, holding the terminal raw, got no signal."""
        try:
            group = os.tcgetpgrp(self.masters[0])
        except OSError:
            return
        if group <= 0 or group == os.getpgrp():  # no command session (it has ended)
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


def _open_pty(modes: list[Any] | None, size: tuple[int, int] | None) -> tuple[int, int]:
    master, slave = os.openpty()
    with contextlib.suppress(termios.error, OSError):
        if modes is not None:
            termios.tcsetattr(slave, termios.TCSANOW, modes)
        if size is not None:
            termios.tcsetwinsize(slave, size)
    return master, slave


@attrs.frozen
class CommandTerminal:
    """What `command_terminal` gives: the executor's `Terminal`, and whether the person
    interrupted the command (read once it has ended)."""

    terminal: Terminal
    _person: _Person

    @property
    def interrupted(self) -> bool:
        return self._person.interrupted


@contextlib.asynccontextmanager
async def command_terminal(*, typing: bool, errors: bool) -> AsyncIterator[CommandTerminal]:
    """Pseudo-terminals for the command's stdout (and stdin when `typing`, stderr when
    `errors`), with the person's modes and window size; while inside, the person's
    terminal is raw (when `typing`) and its keys and size changes are passed on."""
    fd = 0 if typing else 1
    modes: list[Any] | None
    size: tuple[int, int] | None
    try:
        modes = termios.tcgetattr(fd)
    except termios.error:
        modes = None
    try:
        size = termios.tcgetwinsize(fd)
    except (termios.error, OSError):
        size = None
    person = _Person(fd=fd, typing=typing, masters=[])
    terminal: Terminal | None = None
    try:
        out_master, out_slave = _open_pty(modes, size)
        person.masters.append(out_master)
        terminal = Terminal(stdout=out_slave, read_stdout=out_master)
        if typing:
            terminal.stdin = out_slave
        if errors:
            err_master, err_slave = _open_pty(modes, size)
            person.masters.append(err_master)
            terminal.stderr, terminal.read_stderr = err_slave, err_master
        # What the run raised, raised again outside the helpers' nursery: as itself,
        # not inside an exception group (the caller's handlers match its type).
        raised: BaseException | None = None
        with trio.open_signal_receiver(signal.SIGWINCH, signal.SIGCONT) as signals:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(person.follow, signals)
                if typing:
                    person.sender = trio.lowlevel.FdStream(os.dup(out_master))
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
        if terminal is not None:
            terminal.release()
        if person.sender is not None:
            with trio.CancelScope(shield=True):
                await person.sender.aclose()
        for master in person.masters:
            with contextlib.suppress(OSError):
                os.close(master)
