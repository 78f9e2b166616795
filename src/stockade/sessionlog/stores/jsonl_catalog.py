"""The JSON-lines store's catalog (a directory of `<session id>.jsonl` files), and
`catalog_of`: which catalog a store has. Values and the protocol: `sessionlog.catalog`.

Listing reads each log (read-only, no lock taken: a live writer is never disturbed)
and folds the effective values as `session show` does. A session is open while a
writer holds its lock: the listing learns that from /proc/locks, which takes no lock.

Pruning removes the logs whose last activity (the last append: the file's mtime) is
older than a cutoff, and never an open one: each is locked exclusively (without
waiting) before it is removed, and skipped when that fails; the lock is held while
the file is unlinked, and the file is removed only while the path still names it
and it was not written since it was judged.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path
from typing import Any

import msgspec

from ...events import EventRegistry, LogCorrupt, SessionHeader
from ...policy import PolicyDefaults
from .._builtin import BUILTIN_EVENTS
from .._scan import scan_log
from ..catalog import (
    Catalog,
    NoCatalog,
    PruneResult,
    SessionEntry,
    policy_summary,
)
from .jsonl import JsonlStore, directory_store
from .jsonl import session_files as _session_files


def held_inodes() -> set[int] | None:
    """The inodes a flock is granted on now (/proc/locks); None where it cannot be read.

    Matched by inode alone: the device numbers /proc/locks prints need not be the
    ones stat reports (btrfs subvolumes). A stray match on another filesystem only
    shows a session as open, and keeps it from being pruned: the safe side.
    """
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as locks:
            lines = locks.read().splitlines()
    except OSError:
        return None
    held = set()
    for line in lines:
        # "3: FLOCK  ADVISORY  WRITE 4135 fe:00:2150773 0 EOF"; a waiter's has "->".
        fields = line.split()
        if len(fields) >= 6 and fields[1] == "FLOCK":
            inode = fields[5].rpartition(":")[2]
            if inode.isdigit():
                held.add(int(inode))
    return held


def _locked_elsewhere(path: Path) -> bool:
    """Whether a writer holds `path` (where /proc/locks is missing): a shared lock
    taken and dropped at once fails exactly while an exclusive one is held."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
    return False


_HEADER = msgspec.json.Decoder(SessionHeader)
# A header line is short; a first line longer than this is no header the store wrote.
_HEADER_LIMIT = 64 * 1024


def _starts_with_header(fd: int) -> bool:
    """Whether the open file `fd` starts with the line the store writes first: a
    `session/header` event with seq 1. Reads from offset 0 without moving the fd."""
    first = os.pread(fd, _HEADER_LIMIT, 0).split(b"\n", 1)
    if len(first) < 2:
        return False  # empty, or no whole first line
    try:
        header = _HEADER.decode(first[0])
    except msgspec.MsgspecError:
        return False
    return header.seq == 1


def _read(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as log:
        return log.read()


class JsonlCatalog:
    """Listing and pruning `directory`, a JSON-lines store's state directory."""

    def __init__(self, directory: Path, registry: EventRegistry = BUILTIN_EVENTS) -> None:
        self.directory = directory
        self.registry = registry

    def list_sessions(self, *, defaults: PolicyDefaults) -> list[SessionEntry]:
        held = held_inodes()
        entries = []
        for session_id, path, info in _session_files(self.directory):
            is_open = info.st_ino in held if held is not None else _locked_elsewhere(path)
            entry = SessionEntry(
                session=session_id,
                location=str(path),
                last_activity=info.st_mtime,
                size=info.st_size,
                open=is_open,
            )
            try:
                data = _read(path)
                scan = scan_log(data, str(path), self.registry)
            except LogCorrupt as error:
                entry.error = {"code": "LOG_CORRUPT", "detail": str(error)}
            except OSError as error:
                entry.error = {"code": "ENVIRONMENT", "detail": f"cannot read it: {error}"}
            else:
                if data and not scan.events:  # as `session show` judges it
                    detail = f"{path} is not a session log: its first line is no stockade event"
                    entry.error = {"code": "NOT_A_SESSION_LOG", "detail": detail}
                    entries.append(entry)
                    continue
                entry.events = len(scan.events)
                for name, value in policy_summary(scan.events, defaults).items():
                    setattr(entry, name, value)
            entries.append(entry)
        entries.sort(key=lambda entry: (entry.last_activity or 0.0, entry.session))
        return entries

    def prune_sessions(self, cutoff: float, *, dry_run: bool) -> PruneResult:
        held = held_inodes()
        result = PruneResult(removed=[], kept_open=[], failed=[])
        for session_id, path, info in sorted(_session_files(self.directory)):
            if info.st_mtime >= cutoff:
                continue
            entry = SessionEntry(
                session=session_id,
                location=str(path),
                last_activity=info.st_mtime,
                size=info.st_size,
                open=False,
            )
            if held is not None and info.st_ino in held:
                entry.open = True
                result.kept_open.append(entry)
                continue
            try:
                outcome = _remove(path, info, cutoff, dry_run=dry_run, locks_known=held is not None)
            except OSError as error:
                detail = f"cannot remove {path}: {error.strerror or error}"
                entry.error = {"code": "ENVIRONMENT", "detail": detail}
                result.failed.append(entry)
                continue
            if outcome == "not-a-log":
                detail = f"{path} is not a stockade session log (it starts with no header)"
                entry.error = {"code": "NOT_A_SESSION_LOG", "detail": detail}
                result.skipped.append(entry)
            elif outcome == "open":
                entry.open = True
                result.kept_open.append(entry)
            elif outcome == "removed":
                result.removed.append(entry)
        return result


def _remove(
    path: Path, judged: os.stat_result, cutoff: float, *, dry_run: bool, locks_known: bool
) -> str:
    """Remove `path` unless a writer holds it: 'removed', 'open', 'not-a-log' (no header
    the store wrote: never ours to remove), or 'changed' (written or replaced since it
    was judged: left alone). `dry_run` decides the same and removes nothing; it asks
    for the lock only where /proc/locks could not be read (`locks_known` False)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return "changed"
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "changed"
        raise
    try:
        if not _starts_with_header(fd):
            return "not-a-log"
        if dry_run:
            # Nothing is locked or removed: /proc/locks said it is not held (or, where
            # it cannot be read, a shared lock taken and dropped says so).
            return "open" if not locks_known and _locked_elsewhere(path) else "removed"
        try:
            # Held until the file is gone: no writer can take the session meanwhile.
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return "open"
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (judged.st_dev, judged.st_ino) or now.st_mtime >= cutoff:
            return "changed"
        current = os.lstat(path)
        if (current.st_dev, current.st_ino) != (now.st_dev, now.st_ino):
            return "changed"
        os.unlink(path)
        return "removed"
    finally:
        os.close(fd)  # also drops the lock


# --- choosing the catalog ------------------------------------------------------------


def catalog_of(
    store: Any, state_dir: str | None, registry: EventRegistry = BUILTIN_EVENTS
) -> tuple[Catalog, str]:
    """The catalog of `store` (None: the JSON-lines directory `state_dir`, else
    $STOCKADE_STATE_DIR, else the default), and where it is, for messages."""
    if store is None:
        store = directory_store(state_dir, registry)
    if isinstance(store, JsonlStore):
        return JsonlCatalog(store.directory, store.registry), str(store.directory)
    if callable(getattr(store, "list_sessions", None)) and callable(
        getattr(store, "prune_sessions", None)
    ):
        return store, str(getattr(store, "where", "the session log store"))
    where = getattr(store, "where", type(store).__name__)
    raise NoCatalog(f"the session log store {where} cannot list or prune sessions")
