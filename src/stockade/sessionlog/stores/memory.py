"""MemoryStore: logs as byte strings in a dict, for tests and benchmarks.

The same encoding, scan and lock rules as the JSON-lines store, with no disk: what
a test needs to look at a session's log without a state directory.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import attrs

from ...errors import StockadeError
from ...events import EventRegistry, SessionEvent
from ...reprs import fields_repr
from .._builtin import BUILTIN_EVENTS
from .._scan import Scan, scan_log
from .interface import Credentials, OpenedLog, SessionLocked, check_session_id, report_torn


@attrs.define(eq=False)
class MemoryStore:
    """Logs as byte strings in `files` (same encoding, scan and lock rules as on disk).

    Tests may edit `files[session_id]` directly, e.g. to leave a torn tail.
    """

    __repr__ = fields_repr

    registry: EventRegistry = BUILTIN_EVENTS
    files: dict[str, bytearray] = attrs.field(factory=dict)
    commits: int = attrs.field(default=0, init=False)
    torn_tails_cut: int = attrs.field(default=0, init=False)
    _open: set[str] = attrs.field(factory=set, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)

    @property
    def where(self) -> str:
        return "memory"

    def credential_files(self) -> tuple[str, ...]:
        """None: its logs live in this process's memory, behind no login."""
        return ()

    def credentials(self) -> Credentials:
        """None: its logs live in this process's memory, behind no login."""
        return (), ()

    def protected_paths(self) -> tuple[str, ...]:
        """None: no file holds its logs."""
        return ()

    def close(self) -> None:
        """Nothing to release: the logs stay in `files` for a test to look at."""

    def location_of(self, session_id: str) -> str:
        return f"memory:{check_session_id(session_id)}"

    def exists(self, session_id: str) -> bool:
        check_session_id(session_id)
        with self._lock:
            return session_id in self.files

    def session_ids(self) -> list[str]:
        with self._lock:
            return sorted(self.files)

    def scan(self, session_id: str) -> Scan:
        """The session's events as they stand (a torn tail reported, not cut);
        KeyError when it has no log here."""
        location = self.location_of(session_id)
        with self._lock:
            data = bytes(self.files[session_id])
        return scan_log(data, location, self.registry)

    def open(self, session_id: str) -> OpenedLog:
        location = self.location_of(session_id)
        with self._lock:
            if session_id in self._open:
                raise SessionLocked(session_id, location)
            data = self.files.setdefault(session_id, bytearray())
            scan = scan_log(bytes(data), location, self.registry)
            if scan.torn is not None:
                del data[scan.good_length :]
                self.torn_tails_cut += 1
                report_torn(location, scan.torn)
            self._open.add(session_id)
        return OpenedLog(
            handle=_MemoryHandle(self, session_id),
            events=scan.events,
            location=location,
            torn=scan.torn,
        )

    def _append(self, session_id: str, events: Sequence[SessionEvent]) -> None:
        data = self.registry.encode_lines(events)
        with self._lock:
            self.files[session_id] += data
            self.commits += 1

    def _release(self, session_id: str) -> None:
        with self._lock:
            self._open.discard(session_id)


@attrs.define(eq=False)
class _MemoryHandle:
    __repr__ = fields_repr
    store: MemoryStore
    session_id: str
    _closed: bool = False

    def append(self, events: Sequence[SessionEvent]) -> None:
        if self._closed:
            raise StockadeError("append to a closed session log")
        self.store._append(self.session_id, events)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.store._release(self.session_id)
