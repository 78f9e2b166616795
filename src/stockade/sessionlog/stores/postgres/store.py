"""PostgresStore: session logs in PostgreSQL, so any host can resume any session.

The same two protocols as the JSON-lines store (`SessionStore`, `LogHandle`). This
class is the store's face and its state (the sessions it holds, its counters); each
job is a module beside it, which its methods call: connections.py (the holder
connection and the pool), schema.py (migrations), locks.py (one writer per session:
the advisory lock and the epoch that fences), commit.py (the group commit across
sessions), read.py (reading a log back) and catalog.py (list and prune). One class
delegating rather than several objects a caller wires together: the jobs share one
lock and one set of held sessions, and a store is still made with one call.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Sequence
from typing import Any

import attrs

from ....errors import StockadeError
from ....events import EventRegistry, LogCorrupt, SessionEvent
from ....reprs import fields_repr
from ..._builtin import BUILTIN_EVENTS
from ..._scan import Scan
from ..interface import Credentials, OpenedLog, SessionLocked, check_session_id
from . import catalog
from .commit import Combiner, Pending, commit_batch
from .connections import (
    Connections,
    clear_error,
    credential_paths,
    describe_dsn,
    dsn_files,
    dsn_parts,
)
from .libpq import dsn_credentials
from .locks import SessionHeldElsewhere, claim, holder_of, lock_key, try_lock, unlock
from .read import read_scan
from .schema import schema_version

logger = logging.getLogger("stockade.sessionlog")


@attrs.define(eq=False)
class PostgresStore:
    """Session logs in one PostgreSQL database, shared by every host that opens it.

    `dsn` is a libpq connection string or URI; `pool_size` the connections appends
    and reads share (plus one holder connection for the locks). Connections are made
    on first use; `close()` releases them (the harness does at exit).
    """

    __repr__ = fields_repr

    dsn: str
    registry: EventRegistry = BUILTIN_EVENTS
    pool_size: int = 10
    connect_timeout: float = 10.0
    #: How this process names itself to others (SessionLocked, pg_stat_activity).
    owner: str = attrs.field(factory=lambda: f"{socket.gethostname()} pid {os.getpid()}")
    commits: int = attrs.field(default=0, init=False)
    torn_tails_cut: int = attrs.field(default=0, init=False)  # never: commits are atomic
    _count_lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)
    #: The sessions this store holds open (guarded by the connections' lock).
    _open: set[str] = attrs.field(factory=set, init=False)
    _connections: Connections = attrs.field(init=False)
    _combiner: Combiner = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._connections = Connections(
            self.dsn,
            pool_size=self.pool_size,
            connect_timeout=self.connect_timeout,
            owner=self.owner,
            where=describe_dsn(self.dsn),
        )
        self._combiner = Combiner(self.pool_size)

    @property
    def where(self) -> str:
        """The database, as messages name it (no password)."""
        return self._connections.where

    def location_of(self, session_id: str) -> str:
        return f"{self.where}#{session_id}"

    def trusted_files(self) -> tuple[tuple[str, str], ...]:
        """Files whose writer could steer this store: they must pass the trust base."""
        return dsn_files(self.dsn)

    def credential_files(self) -> tuple[str, ...]:
        """Every file libpq would read for this store's connection (its password,
        service and TLS files, named or libpq's defaults), existing or not: what no
        confined command may read."""
        return credential_paths(dsn_parts(self.dsn), os.environ)

    def credentials(self) -> Credentials:
        """libpq's login variables (this process's connection reads them), and the DSN
        and its password as values."""
        return dsn_credentials(self.dsn)

    def protected_paths(self) -> tuple[str, ...]:
        """None: its logs live in the database (its login's files: `credential_files`)."""
        return ()

    def schema_version(self) -> int:
        """The version the database holds (after migrating it, on first use)."""
        with self._connections.lock:
            holder, _ = self._connections.started()
        return schema_version(holder)

    def close(self) -> None:
        """Release every connection (and with them any lock still held). Idempotent."""
        self._combiner.stop()
        with self._connections.lock:
            pool, holder = self._connections.detach()
            self._open.clear()
        if pool is not None:
            pool.close()
        if holder is not None:
            holder.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- open ---------------------------------------------------------------------------

    def open(self, session_id: str) -> OpenedLog:
        """Hold `session_id` exclusively (across hosts) and read its events.

        Raises SessionLocked (SessionHeldElsewhere when another host holds it),
        StoreUnavailable when the database cannot be used, LogCorrupt when the
        stored events do not read back as a gapless log.
        """
        check_session_id(session_id)
        location = self.location_of(session_id)
        key = lock_key(session_id)
        connections = self._connections
        psycopg = connections.psycopg
        with connections.lock:
            holder, pool = connections.started()
            if session_id in self._open:
                raise SessionLocked(session_id, location)
            try:
                taken = try_lock(holder, key)
            except psycopg.Error as error:
                raise clear_error(error, self.where, "taking the session's lock") from None
            if not taken:
                raise SessionHeldElsewhere(session_id, location, holder_of(holder, key, psycopg))
            self._open.add(session_id)
            pid = holder.info.backend_pid
        try:
            epoch, last_seq, scan = self._claim_and_read(pool, session_id)
            found = scan.events[-1].seq if scan.events else 0
            if scan.torn is not None or found != last_seq:
                raise LogCorrupt(
                    f"{location}:{found + 1}",
                    f"the session row says the log ends at seq {last_seq}, its events end "
                    f"at seq {found}",
                )
        except BaseException:
            self._release(session_id, key, pid)
            raise
        handle = PostgresHandle(
            store=self,
            session_id=session_id,
            key=key,
            holder_pid=pid,
            epoch=epoch,
            last_seq=last_seq,
        )
        return OpenedLog(handle=handle, events=scan.events, location=location)

    def _claim_and_read(self, pool: Any, session_id: str) -> tuple[int, int, Scan]:
        """Bump the session's epoch (fencing out any earlier writer) and read its events."""
        try:
            with pool.connection() as conn, conn.transaction():
                epoch, last_seq = claim(conn, session_id, self.owner)
                scan = read_scan(
                    conn, session_id, last_seq, self.location_of(session_id), self.registry
                )
        except self._connections.psycopg.Error as error:
            raise clear_error(error, self.where, "reading the session's events") from None
        return epoch, last_seq, scan

    def _release(self, session_id: str, key: int, pid: int) -> None:
        connections = self._connections
        with connections.lock:
            self._open.discard(session_id)
            holder = connections.holder
            if holder is None or holder.closed or holder.broken:
                return  # gone with its connection
            if holder.info.backend_pid != pid:
                return  # taken on an earlier holder, which is gone, and the lock with it
            try:
                unlock(holder, key)
            except connections.psycopg.Error as error:
                logger.warning("%s: releasing %s's lock failed: %s", self.where, session_id, error)

    # --- append: a group commit across sessions -----------------------------------------

    def _append(self, handle: PostgresHandle, events: Sequence[SessionEvent]) -> None:
        first = handle.last_seq + 1
        if [event.seq for event in events] != list(range(first, first + len(events))):
            raise StockadeError(
                f"{self.location_of(handle.session_id)}: append of seqs "
                f"{events[0].seq}..{events[-1].seq} after seq {handle.last_seq}"
            )
        lines = self.registry.encode_lines(events).split(b"\n")
        lines.pop()
        pending = Pending(handle, events, lines)
        self._combiner.submit(pending, self._commit)
        if pending.error is not None:
            raise pending.error
        handle.last_seq += len(events)

    def _commit(self, batch: list[Pending]) -> None:
        """One group commit (a committer thread calls it); sets each batch's error."""
        committed = commit_batch(
            batch,
            self._connections.pool,
            psycopg=self._connections.psycopg,
            where=self.where,
            location_of=self.location_of,
        )
        if committed:
            with self._count_lock:
                self.commits += committed

    # --- reading without a lock: `stockade session show`, listings ----------------------

    def scan(self, session_id: str) -> Scan:
        """The session's events as they stand, without taking its lock (read-only).

        Raises KeyError when the database has no such session.
        """
        check_session_id(session_id)
        with self._connections.lock:
            _, pool = self._connections.started()
        try:
            with pool.connection() as conn, conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                row = conn.execute(
                    "SELECT last_seq FROM stockade_sessions WHERE session_id = %s", (session_id,)
                ).fetchone()
                if row is None:
                    raise KeyError(session_id)
                return read_scan(
                    conn, session_id, int(row[0]), self.location_of(session_id), self.registry
                )
        except self._connections.psycopg.Error as error:
            raise clear_error(error, self.where, "reading the session's events") from None

    def exists(self, session_id: str) -> bool:
        """Whether the database has a row for the session (read-only, no lock)."""
        check_session_id(session_id)
        return bool(
            self._query_one("SELECT 1 FROM stockade_sessions WHERE session_id = %s", (session_id,))
        )

    def session_ids(self) -> list[str]:
        with self._connections.lock:
            _, pool = self._connections.started()
        try:
            with pool.connection() as conn:
                rows = conn.execute(
                    "SELECT session_id FROM stockade_sessions ORDER BY session_id"
                ).fetchall()
        except self._connections.psycopg.Error as error:
            raise clear_error(error, self.where, "listing the sessions") from None
        return [str(row[0]) for row in rows]

    def _query_one(self, query: str, parameters: tuple[Any, ...]) -> tuple[Any, ...] | None:
        with self._connections.lock:
            _, pool = self._connections.started()
        try:
            with pool.connection() as conn:
                row: tuple[Any, ...] | None = conn.execute(query, parameters).fetchone()
                return row
        except self._connections.psycopg.Error as error:
            raise clear_error(error, self.where, "reading the sessions table") from None

    def list_sessions(self, *, defaults: Any) -> list[Any]:
        """`stockade session list` (the catalog protocol of `sessionlog.catalog`)."""
        return catalog.list_sessions(
            self._connections,
            registry=self.registry,
            location_of=self.location_of,
            defaults=defaults,
        )

    def prune_sessions(self, cutoff: float, *, dry_run: bool) -> Any:
        """`stockade session prune`: remove the sessions idle since before `cutoff` that
        no writer holds (each is locked, without waiting, while it is removed)."""
        return catalog.prune_sessions(
            self._connections,
            self._open,
            cutoff,
            dry_run=dry_run,
            location_of=self.location_of,
        )


@attrs.define(eq=False)
class PostgresHandle:
    """One open session: its lock's key, the holder backend that holds it, the epoch
    its open took and the last seq it committed (what the group commit's gate checks)."""

    __repr__ = fields_repr

    store: PostgresStore
    session_id: str
    key: int
    holder_pid: int
    epoch: int
    last_seq: int
    _closed: bool = False

    def append(self, events: Sequence[SessionEvent]) -> None:
        if self._closed:
            raise StockadeError("append to a closed session log")
        if events:
            self.store._append(self, events)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.store._release(self.session_id, self.key, self.holder_pid)
