"""`stockade session list` and `stockade session prune`: the sessions a store holds.

The JSON-lines store is a directory of `<session id>.jsonl` files; its listing reads
each log (read-only, no lock taken: a live writer is never disturbed) and folds the
effective values as `session show` does. A session is open while a writer holds its
lock: the listing learns that from /proc/locks, which takes no lock itself.

Pruning removes the logs whose last activity (the last append: the file's mtime) is
older than a cutoff, and never an open one: each is locked exclusively (without
waiting) before it is removed, and skipped when that fails; the lock is held while
the file is unlinked, and the file is removed only while the path still names it
and it was not written since it was judged.

Another store (a database) lists and prunes through two methods of its own,
`list_sessions(defaults=...)` and `prune_sessions(cutoff, dry_run=...)`, returning
the same values (`policy_summary` folds a session's events for them).
"""

from __future__ import annotations

import argparse
import datetime
import errno
import fcntl
import os
import re
import stat
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, TextIO

import msgspec

from ..cli.errors import CliError, report
from ..events import EventRegistry, LogCorrupt, SessionEvent, SessionHeader
from ..policy.knobs import PolicyDefaults, knob_state
from ._builtin import BUILTIN_EVENTS
from ._scan import scan_log
from ._store import InvalidSessionId, check_session_id, resolve_state_dir

SUFFIX = ".jsonl"


class SessionEntry(msgspec.Struct, kw_only=True):
    """One session as a listing shows it.

    `last_activity`: seconds since the epoch of the last append; `size`: bytes on disk
    (None for a store without files); `open`: a writer holds it now. The policy
    fields are the effective values (None when the log could not be read: `error`
    then says why, as {"code", "detail"}).
    """

    session: str
    location: str
    last_activity: float | None
    size: int | None
    open: bool
    events: int | None = None
    cwd: str | None = None
    sandbox_mode: str | None = None
    approval_policy: str | None = None
    network: str | None = None
    error: dict[str, str] | None = None


class PruneResult(msgspec.Struct, kw_only=True):
    """What a prune did (or, dry, would do): `removed`, the idle sessions it kept
    because they were open, and those it could not remove (each with its `error`)."""

    removed: list[SessionEntry]
    kept_open: list[SessionEntry]
    failed: list[SessionEntry]
    # `<id>.jsonl` files that do not start with a header the store wrote: never removed.
    skipped: list[SessionEntry] = msgspec.field(default_factory=list)


class Catalog(Protocol):
    """What `session list` and `session prune` need of a store."""

    def list_sessions(self, *, defaults: PolicyDefaults) -> list[SessionEntry]: ...

    def prune_sessions(self, cutoff: float, *, dry_run: bool) -> PruneResult: ...


def policy_summary(events: Sequence[SessionEvent], defaults: PolicyDefaults) -> dict[str, Any]:
    """cwd and the effective mode, approval policy and network of a session's events."""
    header = events[0] if events and isinstance(events[0], SessionHeader) else None
    state = knob_state(events, defaults)
    return {
        "cwd": header.cwd if header else None,
        "sandbox_mode": state.sandbox_mode.value,
        "approval_policy": state.approval_policy.value,
        "network": state.effective_network.value,
    }


# --- the JSON-lines store ------------------------------------------------------------


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


def _session_files(directory: Path) -> list[tuple[str, Path, os.stat_result]]:
    """(id, path, lstat) of each regular `<id>.jsonl` file in `directory`."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    except NotADirectoryError:
        raise CliError("ENVIRONMENT", f"{directory} is not a directory") from None
    except OSError as error:
        raise CliError("ENVIRONMENT", f"cannot read {directory}: {error.strerror}") from None
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


# --- choosing the catalog, and the verbs ---------------------------------------------


def catalog_of(
    store: Any, state_dir: str | None, registry: EventRegistry = BUILTIN_EVENTS
) -> tuple[Catalog, str]:
    """The catalog of `store` (None: the JSON-lines directory `state_dir`, else
    $STOCKADE_STATE_DIR, else the default), and where it is, for messages."""
    if store is None:
        directory = Path(state_dir).expanduser().absolute() if state_dir else resolve_state_dir()
        return JsonlCatalog(directory, registry), str(directory)
    if callable(getattr(store, "list_sessions", None)) and callable(
        getattr(store, "prune_sessions", None)
    ):
        return store, str(getattr(store, "where", "the session log store"))
    where = getattr(store, "where", type(store).__name__)
    raise CliError("CONFIG", f"the session log store {where} cannot list or prune sessions")


_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> float:
    """`7d`, `12h`, `30m`, `45s`, `2w`, `0s`, or a sum such as `1d12h`: seconds."""
    pieces = _DURATION.findall(text)
    if not text or "".join(number + unit for number, unit in pieces) != text:
        raise ValueError(
            f"a duration is a number and a unit (s, m, h, d, w), e.g. 7d, 12h or 0s; got {text!r}"
        )
    return sum(float(number) * _UNIT_SECONDS[unit] for number, unit in pieces)


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    moment = datetime.datetime.fromtimestamp(ts, datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    moment = datetime.datetime.fromtimestamp(ts, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _size(size: int | None) -> str:
    if size is None:
        return "-"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"  # pragma: no cover


def _json_entry(entry: SessionEntry) -> dict[str, Any]:
    facts: dict[str, Any] = msgspec.to_builtins(entry)
    facts["last_activity"] = _iso(entry.last_activity)
    return facts


def _table(entries: Sequence[SessionEntry]) -> str:
    header = (
        "SESSION",
        "LAST ACTIVITY (UTC)",
        "SIZE",
        "MODE",
        "APPROVAL",
        "NETWORK",
        "OPEN",
        "CWD",
    )
    rows = [
        (
            entry.session,
            _when(entry.last_activity),
            _size(entry.size),
            entry.sandbox_mode or "-",
            entry.approval_policy or "-",
            entry.network or "-",
            "yes" if entry.open else "no",
            (entry.cwd or "-") if entry.error is None else f"({entry.error['code']})",
        )
        for entry in entries
    ]
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in (header, *rows)
    ]
    return "\n".join(lines) + "\n"


def run_list(
    args: argparse.Namespace,
    *,
    store: Any = None,
    registry: EventRegistry = BUILTIN_EVENTS,
    defaults: PolicyDefaults | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """`stockade session list [--json]`; `args` needs `json` and `state_dir`."""
    out = sys.stdout if stdout is None else stdout
    as_json = bool(getattr(args, "json", False))
    try:
        catalog, where = catalog_of(store, getattr(args, "state_dir", None), registry)
        entries = catalog.list_sessions(defaults=PolicyDefaults() if defaults is None else defaults)
    except CliError as error:
        return report(error, as_json=as_json, stdout=out, stderr=stderr)
    if as_json:
        reply = {"location": where, "sessions": [_json_entry(entry) for entry in entries]}
        out.write(msgspec.json.encode(reply).decode() + "\n")
        return 0
    if not entries:
        out.write(f"no sessions in {where}\n")
        return 0
    out.write(_table(entries))
    for entry in entries:
        if entry.error is not None:
            out.write(f"{entry.session}: {entry.error['detail']}\n")
    return 0


def run_prune(
    args: argparse.Namespace,
    *,
    store: Any = None,
    registry: EventRegistry = BUILTIN_EVENTS,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    now: float | None = None,
) -> int:
    """`stockade session prune --older-than DURATION [--dry-run] [--json]`: 0 when every
    idle session was removed (or there was none), 1 when one could not be."""
    out = sys.stdout if stdout is None else stdout
    as_json = bool(getattr(args, "json", False))
    dry_run = bool(getattr(args, "dry_run", False))
    older_than = args.older_than
    try:
        seconds = parse_duration(older_than)
    except ValueError as error:
        return report(CliError("USAGE", f"--older-than: {error}"), as_json=as_json, stdout=out)
    cutoff = (time.time() if now is None else now) - seconds
    try:
        catalog, where = catalog_of(store, getattr(args, "state_dir", None), registry)
        result = catalog.prune_sessions(cutoff, dry_run=dry_run)
    except CliError as error:
        return report(error, as_json=as_json, stdout=out, stderr=stderr)
    status = 1 if result.failed else 0
    if as_json:
        reply = {
            "location": where,
            "older_than": older_than,
            "cutoff": _iso(cutoff),
            "dry_run": dry_run,
            "removed": [_json_entry(entry) for entry in result.removed],
            "kept_open": [_json_entry(entry) for entry in result.kept_open],
            "failed": [_json_entry(entry) for entry in result.failed],
            "skipped": [_json_entry(entry) for entry in result.skipped],
        }
        out.write(msgspec.json.encode(reply).decode() + "\n")
        return status
    verb = "would remove" if dry_run else "removed"
    for entry in result.removed:
        out.write(
            f"{verb} {entry.session} (last activity {_when(entry.last_activity)} UTC, "
            f"{_size(entry.size)})\n"
        )
    for entry in result.kept_open:
        out.write(f"kept {entry.session}: open (a session holds it now)\n")
    for entry in result.skipped:
        out.write(f"skipped {entry.location}: not a stockade session log (no header)\n")
    for entry in result.failed:
        detail = entry.error["detail"] if entry.error else "unknown error"
        print(f"stockade: {detail}", file=sys.stderr if stderr is None else stderr)
    freed = sum(entry.size or 0 for entry in result.removed)
    if not (result.removed or result.kept_open or result.failed or result.skipped):
        out.write(f"nothing to prune: no session in {where} idle for {older_than} or more\n")
    else:
        count = len(result.removed)
        out.write(
            f"{verb} {count} session{'s' if count != 1 else ''} ({_size(freed)}) from {where}"
            + (f"; kept {len(result.kept_open)} open" if result.kept_open else "")
            + (f"; {len(result.failed)} could not be removed" if result.failed else "")
            + (f"; skipped {len(result.skipped)} not a session log" if result.skipped else "")
            + "\n"
        )
    return status
