"""A child process on a real pseudo-terminal, and what its screen shows (pyte).

The child gets the pty as its controlling terminal (`pty.fork`), so `/dev/tty`
opens as it does for a person; everything it writes is fed to a pyte terminal
emulator, which interprets escapes as a terminal would: what a test reads from
`screen` is what a person would see.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import pty
import select
import signal
import struct
import termios
import time
from collections.abc import Callable, Mapping, Sequence

import pyte


class PtyChild:
    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        columns: int = 200,
        rows: int = 60,
        history: int = 0,
    ) -> None:
        environment = dict(os.environ if env is None else env)
        environment.update({"TERM": "xterm", "COLUMNS": str(columns), "LINES": str(rows)})
        pid, fd = pty.fork()
        if pid == 0:  # the child: exec at once
            try:
                if cwd is not None:
                    os.chdir(cwd)
                os.execve(argv[0], list(argv), environment)
            finally:
                os._exit(127)
        self.pid = pid
        self.fd = fd
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        if history:
            self.screen: pyte.Screen = pyte.HistoryScreen(columns, rows, history=history)
        else:
            self.screen = pyte.Screen(columns, rows)
        self.stream = pyte.ByteStream(self.screen)
        self.raw = bytearray()
        self.closed = False
        self.status: int | None = None

    # --- reading the screen ---

    def lines(self) -> list[str]:
        """Every row on the screen (and above it, with history), right-stripped."""
        above: list[str] = []
        history = getattr(self.screen, "history", None)
        if history is not None:
            for row in history.top:
                above.append(
                    "".join(row[column].data for column in range(self.screen.columns)).rstrip()
                )
        return above + [line.rstrip() for line in self.screen.display]

    def text(self) -> str:
        return "\n".join(self.lines())

    def _pump(self, timeout: float) -> bool:
        """Feed what the child wrote within `timeout`; False once it closed the pty."""
        if self.closed:
            return False
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError as error:
            if error.errno != errno.EIO:  # Linux: EIO once the child side is closed
                raise
            data = b""
        if not data:
            self.closed = True
            return False
        self.raw += data
        self.stream.feed(data)
        return True

    def wait_for(self, predicate: Callable[[str], bool], timeout: float = 60.0) -> str:
        """Read until `predicate(screen text)` holds; the text, or AssertionError."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.text()
            if predicate(text):
                return text
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.closed:
                raise AssertionError(
                    f"the screen never showed what was expected; it shows:\n{text}\n"
                    f"raw tail: {bytes(self.raw[-2000:])!r}"
                )
            self._pump(min(remaining, 0.5))

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)

    def finish(self, timeout: float = 60.0) -> int:
        """Read until the child closes the pty, reap it; its exit status."""
        deadline = time.monotonic() + timeout
        while self._pump(0.5):
            if time.monotonic() > deadline:
                self.kill()
                raise AssertionError(f"the child did not finish; the screen shows:\n{self.text()}")
        _, status = os.waitpid(self.pid, 0)
        self.status = os.waitstatus_to_exitcode(status)
        os.close(self.fd)
        return self.status

    def kill(self) -> None:
        if self.status is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
            self.status = -9
            with contextlib.suppress(OSError):
                os.close(self.fd)

    def __enter__(self) -> PtyChild:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.kill()
