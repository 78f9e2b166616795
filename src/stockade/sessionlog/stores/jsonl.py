"""JsonlStore: one `<session id>.jsonl` file per session under the state directory.

Where that directory is (`resolve_state_dir`), how a log is opened (O_NOFOLLOW,
created 0600, flock'd exclusively, a torn tail cut) and appended (one write, one
fsync per group commit). The same bytes and the same reader as every other store.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import attrs

from ...errors import StockadeError
from ...events import EventRegistry, SessionEvent
from .._builtin import BUILTIN_EVENTS
from .._scan import scan_log
from .interface import OpenedLog, SessionLocked, check_session_id, report_torn

STATE_DIR_ENV = "STOCKADE_STATE_DIR"


def default_state_dir(environ: Mapping[str, str] | None = None) -> Path:
    """`$XDG_STATE_HOME/stockade/sessions` (XDG's default: ~/.local/state)."""
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_STATE_HOME", "")
    if os.path.isabs(xdg):
        base = Path(xdg)
    else:  # the XDG spec: a relative value is invalid and ignored
        home = env.get("HOME") or str(Path.home())
        base = Path(home) / ".local" / "state"
    return base / "stockade" / "sessions"


def resolve_state_dir(
    configured: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> Path:
    """Where logs go: `$STOCKADE_STATE_DIR` > the configured directory > the XDG default."""
    env = os.environ if environ is None else environ
    chosen = env.get(STATE_DIR_ENV) or configured
    if chosen:
        return Path(chosen).expanduser().absolute()
    return default_state_dir(env)


# --- JSON lines on disk -----------------------------------------------------------------


def _read_all(fd: int) -> bytes:
    """The whole file, in one read of the size it has (then on to the end, should it differ)."""
    chunks = [os.pread(fd, max(os.fstat(fd).st_size, 1 << 16), 0)]
    offset = len(chunks[0])
    while chunks[-1] and (chunk := os.pread(fd, 1 << 20, offset)):
        chunks.append(chunk)
        offset += len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


@attrs.define(eq=False)
class JsonlStore:
    """One `<session id>.jsonl` file per session under `directory`.

    `fsync` is injectable (tests count it); it receives a file descriptor.
    """

    directory: Path = attrs.field(converter=Path)
    registry: EventRegistry = BUILTIN_EVENTS
    fsync: Callable[[int], None] = os.fsync
    torn_tails_cut: int = attrs.field(default=0, init=False)
    _count_lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)

    def credential_files(self) -> tuple[str, ...]:
        """None: it needs no login; its directory is hidden as deny_read's `state`
        item instead."""
        return ()

    def path_for(self, session_id: str) -> Path:
        return self.directory / f"{check_session_id(session_id)}.jsonl"

    def open(self, session_id: str) -> OpenedLog:
        path = self.path_for(session_id)
        # O_NOFOLLOW: a link planted under the state directory never redirects a log.
        flags = os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW
        try:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(path, flags | os.O_EXCL, 0o600)
            created = True
        except FileExistsError:
            try:
                fd = os.open(path, flags, 0o600)
            except OSError as error:
                if error.errno != errno.ELOOP:
                    raise
                raise StockadeError(
                    f"{path} is a symbolic link; a session log is never opened through a "
                    "link. Remove the link, or open a different session id."
                ) from None
            created = False
        except OSError as error:
            # A missing or read-only $HOME, a state directory nobody may write: one line.
            raise StockadeError(
                f"cannot keep a session log in {self.directory}: "
                f"{error.strerror or error} ({error.filename}). Set {STATE_DIR_ENV} (or "
                "the log's state_dir) to a directory you can write"
            ) from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise SessionLocked(session_id, str(path)) from None
            if created:
                self._fsync_directory()
            scan = scan_log(_read_all(fd), str(path), self.registry)
            if scan.torn is not None:
                os.ftruncate(fd, scan.good_length)
                self.fsync(fd)
                with self._count_lock:
                    self.torn_tails_cut += 1
                report_torn(str(path), scan.torn)
        except BaseException:
            os.close(fd)
            raise
        handle = _JsonlHandle(
            fd=fd, size=scan.good_length, registry=self.registry, fsync=self.fsync
        )
        return OpenedLog(handle=handle, events=scan.events, location=str(path), torn=scan.torn)

    def _fsync_directory(self) -> None:
        dir_fd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            self.fsync(dir_fd)
        finally:
            os.close(dir_fd)


@attrs.define(eq=False)
class _JsonlHandle:
    fd: int
    size: int
    registry: EventRegistry
    fsync: Callable[[int], None]
    _closed: bool = False

    def append(self, events: Sequence[SessionEvent]) -> None:
        if self._closed:
            raise StockadeError("append to a closed session log")
        payload = self.registry.encode_lines(events)
        data = memoryview(payload)
        start = self.size
        try:
            while data:
                written = os.write(self.fd, data)
                data = data[written:]
            self.fsync(self.fd)
        except BaseException:
            # Leave no unacknowledged bytes behind where we can help it.
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, start)
            raise
        self.size = start + len(payload)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            os.close(self.fd)  # also releases the flock
