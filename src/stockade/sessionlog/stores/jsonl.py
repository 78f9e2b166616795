"""JsonlStore: one `<session id>.jsonl` file per session under the state directory.

Where that directory is (`resolve_state_dir`), how a log is opened (O_NOFOLLOW,
created 0600, flock'd exclusively, a torn tail cut) and appended (one write, one
fsync per group commit). The same bytes and the same reader as every other store.
And a log file read by its path, whatever its name (`read_log_file`: `stockade
session show ./x.jsonl`), without a lock.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import attrs

from ...errors import StockadeError
from ...events import EventRegistry, LogCorrupt, SessionEvent
from ...reprs import fields_repr
from .._builtin import BUILTIN_EVENTS
from .._scan import Scan, scan_log
from ..catalog import CatalogUnreadable
from .interface import (
    Credentials,
    InvalidSessionId,
    OpenedLog,
    SessionLocked,
    check_session_id,
    report_torn,
)

STATE_DIR_ENV = "STOCKADE_STATE_DIR"
# A log's file name: its session id and this.
SUFFIX = ".jsonl"


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


def directory_store(
    state_dir: str | os.PathLike[str] | None, registry: EventRegistry = BUILTIN_EVENTS
) -> JsonlStore:
    """The JSON-lines store of `state_dir` (None: $STOCKADE_STATE_DIR, else the
    default): where the `session` verbs look when no composition names a store."""
    directory = Path(state_dir).expanduser().absolute() if state_dir else resolve_state_dir()
    return JsonlStore(directory, registry=registry)


# --- JSON lines on disk -----------------------------------------------------------------


def session_files(directory: Path) -> list[tuple[str, Path, os.stat_result]]:
    """(id, path, lstat) of each regular `<id>.jsonl` file in `directory` ([] when it is
    missing); CatalogUnreadable when it cannot be listed."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    except NotADirectoryError:
        raise CatalogUnreadable(f"{directory} is not a directory") from None
    except OSError as error:
        raise CatalogUnreadable(f"cannot read {directory}: {error.strerror}") from None
    found = []
    for name in names:
        if not name.endswith(SUFFIX):
            continue
        session_id = name[: -len(SUFFIX)]
        try:
            check_session_id(session_id)
        except InvalidSessionId:
            continue  # not a name the store makes: not ours to show or remove
        path = directory / name
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):  # a link is never a log (the store refuses them)
            found.append((session_id, path, info))
    return found


class UnreadableLog(StockadeError):
    """A log file that cannot be read back, in one line; `code` says why, as `stockade
    session show` and the catalog's entries name it: SESSION_NOT_FOUND,
    NOT_A_SESSION_LOG, LOG_CORRUPT or ENVIRONMENT (the system refused)."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


def names_a_log_file(path_or_id: str) -> bool:
    """Whether `path_or_id` names a log file rather than a session id: an existing
    file, a path (a separator in it), or a name ending as a log file's does."""
    return Path(path_or_id).is_file() or os.sep in path_or_id or path_or_id.endswith(SUFFIX)


def session_of_file(path: str | os.PathLike[str]) -> str:
    """The session a log file is named for (its name, less the log files' suffix)."""
    return Path(path).name.removesuffix(SUFFIX)


def read_log_file(path: str | os.PathLike[str], registry: EventRegistry = BUILTIN_EVENTS) -> Scan:
    """The events of the log file at `path`, whatever its name, read without a lock
    and changing nothing (a torn tail is reported, not cut); UnreadableLog, saying in
    one line what `path` is, when it is no readable session log."""
    path = Path(path)
    try:
        info = path.stat()
    except FileNotFoundError:
        raise UnreadableLog("SESSION_NOT_FOUND", f"no session log at {path}") from None
    except OSError as error:
        raise UnreadableLog("ENVIRONMENT", f"cannot read {path}: {error.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        raise UnreadableLog(
            "NOT_A_SESSION_LOG",
            f"{path} is a directory, not a session log (the logs in it: "
            f"stockade session list --state-dir {path})",
        )
    if not stat.S_ISREG(info.st_mode):
        raise UnreadableLog("NOT_A_SESSION_LOG", f"{path} is not a session log: not a regular file")
    try:
        data = path.read_bytes()
    except OSError as error:
        raise UnreadableLog("ENVIRONMENT", f"cannot read {path}: {error.strerror}") from None
    not_a_log = UnreadableLog(
        "NOT_A_SESSION_LOG", f"{path} is not a session log: its first line is no stockade event"
    )
    try:
        scan = scan_log(data, str(path), registry)
    except LogCorrupt as error:
        if error.where == f"{path}:1":
            raise not_a_log from None
        raise UnreadableLog("LOG_CORRUPT", str(error)) from None
    if data and not scan.events:  # one line, and not an event: a torn tail to the store
        raise not_a_log
    return scan


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

    __repr__ = fields_repr

    directory: Path = attrs.field(converter=Path)
    registry: EventRegistry = BUILTIN_EVENTS
    fsync: Callable[[int], None] = os.fsync
    torn_tails_cut: int = attrs.field(default=0, init=False)
    _count_lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)

    @property
    def where(self) -> str:
        return str(self.directory)

    def credential_files(self) -> tuple[str, ...]:
        """None: it needs no login; its directory is hidden as deny_read's `state`
        item instead (`protected_paths`)."""
        return ()

    def credentials(self) -> Credentials:
        """None: it needs no login."""
        return (), ()

    def protected_paths(self) -> tuple[str, ...]:
        """Its directory: a command that could write there could rewrite a session's
        mode for its next resume, and one that could read it reads every session."""
        return (os.path.abspath(self.directory),)

    def close(self) -> None:
        """Nothing to release: each log's file is closed with its handle."""

    def path_for(self, session_id: str) -> Path:
        return self.directory / f"{check_session_id(session_id)}{SUFFIX}"

    def location_of(self, session_id: str) -> str:
        return str(self.path_for(session_id))

    def exists(self, session_id: str) -> bool:
        """Whether anything stands at the session's path (a link too: `open` then
        says it never follows one, rather than making a new log beside it)."""
        return os.path.lexists(self.path_for(session_id))

    def session_ids(self) -> list[str]:
        return sorted(session_id for session_id, _, _ in session_files(self.directory))

    def scan(self, session_id: str) -> Scan:
        """The session's events, read without its lock (`read_log_file`): KeyError when
        nothing is at its path, UnreadableLog when what is there is no readable log."""
        try:
            return read_log_file(self.path_for(session_id), self.registry)
        except UnreadableLog as error:
            if error.code == "SESSION_NOT_FOUND":
                raise KeyError(session_id) from None
            raise

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
    __repr__ = fields_repr
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
