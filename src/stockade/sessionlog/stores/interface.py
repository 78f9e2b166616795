"""The store interface: what the SessionLogActor asks of a store, and what every store shares.

`SessionStore` opens a log exclusively and reads it back; `LogHandle` appends to it
durably. A store also answers for itself what the rest of stockade needs to know
about where logs live, so no other folder names a store or its format: whether a
session exists and where, which ids it holds, a log read without a lock, the paths
no confined command may reach, and its login (files, environment). A store's
methods block (file or database I/O); the SessionLogActor calls them from worker
threads, one writer per open session, so a store needs no trio.
The JSON-lines, memory and PostgreSQL stores, the actor and the catalog import this
module; it imports no trio, and no store.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Protocol

import attrs

from ...errors import ConfigError, StockadeError
from ...events import EventRegistry, SessionEvent
from ...reprs import fields_repr
from .._scan import Scan, TornTail

logger = logging.getLogger("stockade.sessionlog")

# fullmatch, not `$`: `$` also matches before a trailing newline ("abc\n").
_SESSION_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class SessionLocked(StockadeError):
    """Another writer holds the session open; two writers to one log are refused."""

    def __init__(self, session_id: str, location: str) -> None:
        super().__init__(
            f"session {session_id!r} is already open for writing elsewhere ({location} is "
            "locked by another process, or by another session log in this one). Close that "
            "session or let its process exit first, or open a different session id."
        )
        self.session_id = session_id
        self.location = location


class InvalidSessionId(ConfigError):
    """A session id that cannot name a log."""


def check_session_id(session_id: str) -> str:
    if not isinstance(session_id, str) or not _SESSION_ID_RE.fullmatch(session_id):
        raise InvalidSessionId(
            f"invalid session id {session_id!r}: use 1-128 letters, digits, '.', '_' "
            "or '-', starting with a letter or digit"
        )
    return session_id


class LogHandle(Protocol):
    """One open, exclusively held session log."""

    def append(self, events: Sequence[SessionEvent]) -> None:
        """Write `events` (already stamped) and return only once they are durable."""
        ...

    def close(self) -> None:
        """Release the log (and its lock). Idempotent."""
        ...


@attrs.frozen
class OpenedLog:
    __repr__ = fields_repr
    handle: LogHandle
    events: tuple[SessionEvent, ...]
    location: str
    torn: TornTail | None = None


# A store's login as the environment carries it: (names, values). `names`: the
# variables (globs, case-insensitive) its connection reads a login from; `values`:
# its secrets themselves (a DSN, a password). No command may inherit either
# (the executor's `Withheld`); () and () for a store with no login.
Credentials = tuple[tuple[str, ...], tuple[str, ...]]


class SessionStore(Protocol):
    registry: EventRegistry

    @property
    def where(self) -> str:
        """The store, as messages name it (a directory, a database without its
        password)."""
        ...

    def open(self, session_id: str) -> OpenedLog:
        """Hold `session_id`'s log exclusively (creating it empty when missing).

        Cuts a torn tail (reported once: warning + `torn_tails_cut`), raises
        LogCorrupt for a corrupt log and SessionLocked when another writer holds it.
        """
        ...

    def exists(self, session_id: str) -> bool:
        """Whether the store holds a log under `session_id` (one `open` would read,
        not create). Raises InvalidSessionId for an id that cannot name a log."""
        ...

    def location_of(self, session_id: str) -> str:
        """Where `session_id`'s log is (or would be), as messages name it."""
        ...

    def session_ids(self) -> list[str]:
        """The ids of the sessions the store holds, sorted (what a prefix of an id is
        completed against)."""
        ...

    def scan(self, session_id: str) -> Scan:
        """`session_id`'s events as they stand, read without its lock and changing
        nothing (a torn tail is reported, not cut). KeyError when the store holds no
        such session."""
        ...

    def protected_paths(self) -> tuple[str, ...]:
        """The paths holding this store's logs (absolute; existing or not), which no
        confined command may write or read: the harness refuses a session whose
        writable roots reach one (the trust base's check 1) and adds them to
        deny_read's `state` item. () for a store that keeps no logs on this host's
        file system."""
        ...

    def credentials(self) -> Credentials:
        """The environment's share of this store's login (`Credentials`): the names
        and values no command's environment may hold, whatever its policy says."""
        ...

    def credential_files(self) -> tuple[str, ...]:
        """The files holding this store's own login (a database's password, service
        and TLS files), existing or not; () for a store with none. No confined command
        may read them: the harness and the CLI verbs add them to deny_read."""
        ...

    def close(self) -> None:
        """Release what the store holds (a database's connections). Idempotent."""
        ...


def report_torn(location: str, torn: TornTail) -> None:
    """The one warning a store logs when it cuts a torn tail."""
    logger.warning(
        "%s:%d: cut a torn last line (%d bytes, %s); the events before it are kept",
        location,
        torn.line,
        torn.length,
        torn.reason,
    )
