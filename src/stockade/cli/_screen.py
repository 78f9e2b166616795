"""The caller's side of `stockade run`'s streams: stockade's own stdout and stderr
as the command's output reaches them live, and a piped stdin passed on.
"""

from __future__ import annotations

import os
import select
import sys
from typing import TYPE_CHECKING

import trio

from ..executor import READ_SIZE, Sink, Source, Streams

if TYPE_CHECKING:
    import argparse


class OutputClosed(Exception):
    """The reader of stockade's stdout or stderr went away while a command's output
    was being passed on."""


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:  # a descriptor someone else made non-blocking
            select.select([], [fd], [])


class Screen:
    """Where the command's output went (stockade's fd 1 and 2), and whether the last
    byte shown there ended a line: stockade's own lines must start on a fresh one."""

    def __init__(self) -> None:
        self.last: dict[int, bytes] = {}
        self.shared = _same_file(1, 2)  # both on one terminal (or file): one line state

    def sink(self, fd: int, *, raw: bool = False) -> Sink:
        """Each chunk written to `fd` whole, in a worker thread: a slow reader (a pager)
        holds back only this stream, never the timeout or a Ctrl-C. `raw`: a pipe's
        output onto a terminal held raw, which starts no new line at \n by itself."""

        async def sink(chunk: bytes) -> None:
            if raw:
                chunk = chunk.replace(b"\n", b"\r\n")
            try:
                await trio.to_thread.run_sync(_write_all, fd, chunk, abandon_on_cancel=True)
            except BrokenPipeError:
                # The reader went away (`stockade run yes | head -1`): as a shell's
                # writer would get SIGPIPE, the command ends and so does the run.
                raise OutputClosed(fd) from None
            self.last[fd if not self.shared else 0] = chunk[-1:]

        return sink

    def fresh_line(self) -> None:
        self.last.clear()

    def line_start(self) -> str:
        """A newline when what was shown on stderr stopped mid-line, else nothing."""
        last = self.last.get(0 if self.shared else 2, b"\n")
        return "" if last == b"\n" else "\n"


def _same_file(first: int, second: int) -> bool:
    try:
        one, other = os.fstat(first), os.fstat(second)
    except OSError:
        return False
    return (one.st_dev, one.st_ino) == (other.st_dev, other.st_ino)


def _read_stdin() -> bytes:
    try:
        return os.read(0, READ_SIZE)
    except OSError:
        return b""  # unreadable input ends like an empty one


def stdin_source() -> Source | None:
    """stdin, chunk by chunk, when it is a pipe or a file; None on a terminal (the
    command must not read, or type into, the person's terminal) or when closed."""
    try:
        if os.isatty(0):
            return None
        os.fstat(0)
    except OSError:
        return None

    async def source() -> bytes:
        # A read cannot be interrupted: when the command is done it is abandoned.
        return await trio.to_thread.run_sync(_read_stdin, abandon_on_cancel=True)

    return source


def streams_for(
    args: argparse.Namespace, screen: Screen, *, typing: bool = False, raw_stderr: bool = False
) -> Streams:
    if args.json:
        return Streams(stdin=stdin_source())
    sys.stdout.flush()
    sys.stderr.flush()
    # Typed input goes to the command's own terminal, not through a source.
    stdin = None if typing else stdin_source()
    return Streams(stdout=screen.sink(1), stderr=screen.sink(2, raw=raw_stderr), stdin=stdin)


def on_a_terminal(args: argparse.Namespace) -> bool:
    """Whether the command runs on a terminal of its own: stdout is a terminal and
    nothing is read by a program (--json)."""
    return not args.json and sys.platform != "win32" and os.isatty(1)
