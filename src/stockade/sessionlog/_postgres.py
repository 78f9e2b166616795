"""PostgresStore: session logs in PostgreSQL, so any host can resume any session.

The same two protocols as the JSON-lines store (`SessionStore`, `LogHandle`); the
same bytes per event (each event's JSON line, as `encode_lines` writes it), and the
same reader (`scan_log`), so replay and fold are identical by construction.

One writer per session, across hosts
-----------------------------------
Opening a session takes a session-level advisory lock (`pg_try_advisory_lock`) on
the store's one *holder* connection: one per store (per host), whatever the number
of sessions. A lock held by a backend is released when it unlocks or when the
backend ends, and a backend ends when its client's connection does (at once on a
Unix socket or a closed TCP connection; for a host that vanished, after the TCP
keepalives the holder sets: about 30 s). So a killed or partitioned host frees its
sessions by itself, with no lease to renew and no clock to trust; that is why this
store uses an advisory lock rather than a lease row with an expiry.

Appends go through a pool (any connection), as one statement, so one round trip and
one transaction per group commit. The statement commits only when, at that moment,
(1) the holder's backend still holds the session's lock (`pg_locks`), (2) the
session row still carries the epoch this open took, and (3) the log still ends at
the seq the writer expects; otherwise it changes nothing and the writer raises
`SessionLockLost`. The epoch is a fencing token: every open bumps it under the
session row's lock, and an append updates that row in its own transaction, so an
open on another host either sees a racing append (it committed first) or makes it
fail (the epoch moved). A writer that lost its lock never appends.

Durable: every pool connection runs with `synchronous_commit = on` (whatever the
role's or database's default), so an append returns only after its commit record
is flushed.

Schema: created or migrated on first use, under a transaction-level advisory lock so
two hosts starting at once do not race; `stockade_schema` holds the version. A
database whose schema is newer than this code is refused (`SchemaTooNew`).

psycopg 3 (with psycopg-pool) is an extra (`stockade[postgres]`), imported only when
a PostgresStore is made. docs/scaling.md explains the deployment; docs/decisions.md
why psycopg in worker threads rather than asyncpg through trio-asyncio.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import queue
import socket
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

import attrs

from ..errors import ConfigError, StockadeError
from ..events import EventRegistry, LogCorrupt, SessionEvent
from ._builtin import BUILTIN_EVENTS
from ._scan import Scan, _gc_paused, scan_log
from ._store import OpenedLog, SessionLocked, check_session_id

logger = logging.getLogger("stockade.sessionlog")

#: The schema this code writes and reads; `MIGRATIONS[n]` brings version n-1 to n.
SCHEMA_VERSION: Final = 1

MIGRATIONS: Final[Mapping[int, tuple[str, ...]]] = {
    1: (
        """
        CREATE TABLE stockade_sessions (
            session_id text PRIMARY KEY,
            created_at timestamptz NOT NULL DEFAULT now(),
            -- The last committed seq: every append moves it, in the same statement.
            last_seq bigint NOT NULL DEFAULT 0,
            -- Bumped by every open: the fencing token a writer's appends must match.
            epoch bigint NOT NULL DEFAULT 0,
            -- Who opened it last (host, pid), for people and for SessionLocked.
            owner text,
            opened_at timestamptz
        )
        """,
        """
        CREATE TABLE stockade_events (
            session_id text NOT NULL,
            seq bigint NOT NULL,
            ts double precision NOT NULL,
            type text NOT NULL,
            -- The event's JSON line (no newline), byte for byte as JsonlStore writes it.
            data bytea NOT NULL,
            PRIMARY KEY (session_id, seq)
        )
        """,
        # Append-only: an event, once written, is never rewritten in place.
        """
        CREATE FUNCTION stockade_refuse_update() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'stockade_events is append-only: an event is never updated';
        END $$
        """,
        """
        CREATE TRIGGER stockade_events_append_only BEFORE UPDATE ON stockade_events
            FOR EACH STATEMENT EXECUTE FUNCTION stockade_refuse_update()
        """,
    ),
}

# Advisory-lock keys live in one 64-bit space per database, shared with every other
# application there: a session's key is a hash under a namespace of our own.
_NAMESPACE: Final = b"stockade.sessionlog.v1\x00"
_MIGRATION_KEY: Final = int.from_bytes(
    hashlib.blake2b(_NAMESPACE + b"schema", digest_size=8).digest(), "big", signed=True
)
# Events per chunk when reading a log back: the server concatenates a chunk's lines.
_READ_CHUNK: Final = 20_000
# The holder's TCP keepalives (server side): a vanished host's backend, and with it
# its locks, is gone after about idle + interval * count seconds.
_KEEPALIVE: Final = {
    "tcp_keepalives_idle": 10,
    "tcp_keepalives_interval": 5,
    "tcp_keepalives_count": 3,
}

# One group commit: the batches of every session whose writer is waiting, in one
# statement (one round trip, one transaction, one WAL flush). The lock table is read
# once; each session's batch goes in only if its gate holds; the ids that went in
# come back.
_APPEND: Final = """
WITH batch AS (
    SELECT * FROM unnest(
        %(sids)s::text[], %(epochs)s::int8[], %(prevs)s::int8[], %(lasts)s::int8[],
        %(his)s::oid[], %(los)s::oid[], %(pids)s::int4[]
    ) AS b(sid, epoch, prev, last, hi, lo, pid)
), held AS MATERIALIZED (
    SELECT classid, objid, pid FROM pg_locks
    WHERE locktype = 'advisory' AND objsubid = 1 AND granted
), gate AS (
    UPDATE stockade_sessions s SET last_seq = b.last
    FROM batch b
    WHERE s.session_id = b.sid AND s.epoch = b.epoch AND s.last_seq = b.prev
      AND EXISTS (SELECT 1 FROM held h WHERE h.classid = b.hi AND h.objid = b.lo AND h.pid = b.pid)
    RETURNING s.session_id
), written AS (
    INSERT INTO stockade_events (session_id, seq, ts, type, data)
    SELECT e.sid, e.seq, e.ts, e.type, e.data
    FROM unnest(
        %(esids)s::text[], %(seqs)s::int8[], %(tss)s::float8[], %(types)s::text[],
        %(datas)s::bytea[]
    ) AS e(sid, seq, ts, type, data)
    WHERE e.sid IN (SELECT session_id FROM gate)
)
SELECT session_id FROM gate
"""
# Reading a log back: the primary key's range scan, in seq order, joined by the server.
_READ: Final = """
SELECT string_agg(data, '\\x0a'::bytea) FROM (
    SELECT data FROM stockade_events WHERE session_id = %s AND seq > %s AND seq <= %s
    ORDER BY seq
) AS chunk
"""
# The plan that read is written for (the planner may guess a sort from stale statistics).
_READ_SETTINGS: Final = (
    "SET LOCAL enable_seqscan = off",
    "SET LOCAL enable_bitmapscan = off",
    "SET LOCAL max_parallel_workers_per_gather = 0",
    "SET LOCAL jit = off",
)


class StoreUnavailable(StockadeError):
    """The session-log database cannot be reached, refused the login, or went away."""


class SchemaTooNew(StockadeError):
    """The database holds a schema version this code does not know."""

    def __init__(self, where: str, found: int, known: int) -> None:
        super().__init__(
            f"{where}: the session-log schema is at version {found}, newer than this "
            f"stockade knows ({known}); a newer stockade migrated it. Upgrade stockade on "
            "this host (a downgrade never rewrites the schema)."
        )
        self.found = found
        self.known = known


class SessionLockLost(StockadeError):
    """This writer no longer holds its session's lock (or another host reopened it)."""


class SessionHeldElsewhere(SessionLocked):
    """SessionLocked, naming which host holds the session (from the database)."""

    def __init__(self, session_id: str, location: str, holder: str) -> None:
        super().__init__(session_id, location)
        self.args = (
            f"session {session_id!r} is already open for writing by {holder} ({location}). "
            "Close it there or let that process exit (a killed or vanished host frees it "
            "within about 30 s), or open a different session id.",
        )
        self.holder = holder


def lock_key(session_id: str) -> int:
    """The signed 64-bit advisory-lock key of a session (stable across hosts and versions)."""
    digest = hashlib.blake2b(_NAMESPACE + session_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _key_halves(key: int) -> tuple[int, int]:
    """How pg_locks shows a bigint key: high half in `classid`, low half in `objid`."""
    unsigned = key & 0xFFFF_FFFF_FFFF_FFFF
    return unsigned >> 32, unsigned & 0xFFFF_FFFF


def _import_psycopg() -> Any:
    try:
        import psycopg
        import psycopg_pool  # noqa: F401
    except ImportError as error:
        raise ConfigError(
            "the postgres session-log store needs psycopg 3 and psycopg-pool: "
            f"pip install 'stockade[postgres]' ({error})"
        ) from None
    return psycopg


def dsn_parts(dsn: str) -> dict[str, str]:
    """The DSN's parameters (a URI or key=value string), as libpq reads them."""
    psycopg = _import_psycopg()
    try:
        return {k: str(v) for k, v in psycopg.conninfo.conninfo_to_dict(dsn).items()}
    except psycopg.ProgrammingError as error:
        raise ConfigError(f"the session log's dsn cannot be parsed: {error}") from None


def describe_dsn(dsn: str) -> str:
    """Where a DSN points, for messages: never its password."""
    parts = dsn_parts(dsn)
    host = parts.get("host") or os.environ.get("PGHOST") or "(libpq default socket)"
    port = parts.get("port") or os.environ.get("PGPORT") or "5432"
    user = parts.get("user") or os.environ.get("PGUSER") or "(login user)"
    dbname = parts.get("dbname") or os.environ.get("PGDATABASE") or user
    service = f" service={parts['service']}" if "service" in parts else ""
    return f"postgres {user}@{host}:{port}/{dbname}{service}"


# libpq reads these files; whoever can write one can redirect or impersonate the log.
_FILE_PARAMETERS: Final = {
    "passfile": "the session log database's password file",
    "sslrootcert": "the session log database's CA certificate",
    "sslcert": "the session log database's client certificate",
    "sslkey": "the session log database's client key",
    "sslcrl": "the session log database's certificate revocation list",
}


def dsn_files(dsn: str, environ: Mapping[str, str] | None = None) -> tuple[tuple[str, str], ...]:
    """(path, what) for every file libpq would read for this DSN and that exists or is named.

    The password file (`passfile`, else `$PGPASSFILE`, else `~/.pgpass` when present),
    the service file when the DSN names a `service` (`$PGSERVICEFILE`, else
    `~/.pg_service.conf`), and any TLS file. Each must pass the trust base's check 1:
    a confined command that could write one could point the log elsewhere, or log in
    as someone else.
    """
    env = os.environ if environ is None else environ
    parts = dsn_parts(dsn)
    found: list[tuple[str, str]] = []
    for name, what in _FILE_PARAMETERS.items():
        value = parts.get(name) or env.get(f"PG{name.upper()}")
        if value and value not in ("system",):
            found.append((os.path.abspath(os.path.expanduser(value)), what))
    if "passfile" not in parts and not env.get("PGPASSFILE"):
        default = os.path.expanduser("~/.pgpass")
        if os.path.exists(default):
            found.append((default, _FILE_PARAMETERS["passfile"]))
    if "service" in parts or env.get("PGSERVICE"):
        servicefile = env.get("PGSERVICEFILE") or os.path.expanduser("~/.pg_service.conf")
        found.append((os.path.abspath(servicefile), "the session log database's service file"))
    return tuple(dict.fromkeys(found))


def _clear_error(error: BaseException, where: str, doing: str) -> StoreUnavailable:
    """A psycopg error as one line saying what failed, where, and what to check."""
    text = str(error).strip().replace("\n", " ")
    hint = "check that the server runs and the dsn's host, port and dbname"
    lowered = text.lower()
    if "password" in lowered or "authentication" in lowered:
        hint = (
            "check the user and its password (from the dsn's environment variable or password file)"
        )
    elif "does not exist" in lowered and "database" in lowered:
        hint = "create the database, or fix the dsn's dbname"
    return StoreUnavailable(f"{where}: {doing} failed: {text}; {hint}")


@attrs.define(eq=False)
class PostgresStore:
    """Session logs in one PostgreSQL database, shared by every host that opens it.

    `dsn` is a libpq connection string or URI; `pool_size` the connections appends
    and reads share (plus one holder connection for the locks). Connections are made
    on first use; `close()` releases them (the harness does at exit).
    """

    dsn: str
    registry: EventRegistry = BUILTIN_EVENTS
    pool_size: int = 10
    connect_timeout: float = 10.0
    #: How this process names itself to others (SessionLocked, pg_stat_activity).
    owner: str = attrs.field(factory=lambda: f"{socket.gethostname()} pid {os.getpid()}")
    commits: int = attrs.field(default=0, init=False)
    torn_tails_cut: int = attrs.field(default=0, init=False)  # never: commits are atomic
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)
    _count_lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)
    _holder: Any = attrs.field(default=None, init=False)
    _pool: Any = attrs.field(default=None, init=False)
    _open: set[str] = attrs.field(factory=set, init=False)
    _closed: bool = attrs.field(default=False, init=False)
    _where: str = attrs.field(default="", init=False)
    _psycopg: Any = attrs.field(default=None, init=False)
    _combiner: _Combiner = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._psycopg = _import_psycopg()
        self._where = describe_dsn(self.dsn)
        self._combiner = _Combiner(self.pool_size)

    @property
    def where(self) -> str:
        """The database, as messages name it (no password)."""
        return self._where

    def location_of(self, session_id: str) -> str:
        return f"{self._where}#{session_id}"

    def trusted_files(self) -> tuple[tuple[str, str], ...]:
        """Files whose writer could steer this store: they must pass the trust base."""
        return dsn_files(self.dsn)

    # --- connections -------------------------------------------------------------------

    def _connect(self, purpose: str) -> Any:
        psycopg = self._psycopg
        try:
            return psycopg.connect(
                self.dsn,
                autocommit=True,
                connect_timeout=max(1, round(self.connect_timeout)),
                application_name=f"stockade {purpose} ({self.owner})"[:63],
            )
        except psycopg.Error as error:
            raise _clear_error(error, self._where, "connecting") from None

    def _configure(self, conn: Any) -> None:
        # Durable whatever the server's, role's or database's default says.
        conn.execute("SET synchronous_commit = on")

    def _started(self) -> tuple[Any, Any]:
        """The holder connection and the pool, made (and the schema migrated) on first use.

        Call with `self._lock` held.
        """
        if self._closed:
            raise StockadeError(f"{self._where}: the session-log store was closed")
        holder = self._holder
        if holder is None or holder.closed or holder.broken:
            if holder is not None:
                logger.warning("%s: the lock connection was lost; reconnecting", self._where)
            holder = self._connect("locks")
            try:
                for name, value in _KEEPALIVE.items():
                    holder.execute(f"SET {name} = {int(value)}")
                if holder.execute("SHOW fsync").fetchone() == ("off",):
                    logger.warning(
                        "%s: the server runs with fsync = off: a commit it acknowledges "
                        "may be lost in a crash, and so may acknowledged session events",
                        self._where,
                    )
                if self._pool is None:
                    self._migrate(holder)
            except BaseException:
                holder.close()
                raise
            self._holder = holder
        if self._pool is None:
            from psycopg_pool import ConnectionPool

            pool = ConnectionPool(
                self.dsn,
                min_size=self.pool_size,
                max_size=self.pool_size,
                kwargs={
                    "autocommit": True,
                    "application_name": f"stockade appends ({self.owner})"[:63],
                    "connect_timeout": max(1, round(self.connect_timeout)),
                },
                configure=self._configure,
                timeout=self.connect_timeout,
                name="stockade-sessionlog",
                open=False,
            )
            try:
                pool.open(wait=True, timeout=self.connect_timeout)
            except Exception as error:
                pool.close()
                raise _clear_error(error, self._where, "opening the connection pool") from None
            self._pool = pool
        return holder, self._pool

    def _migrate(self, conn: Any) -> None:
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_KEY,))
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS stockade_schema ("
                    " singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),"
                    " version integer NOT NULL,"
                    " migrated_at timestamptz NOT NULL DEFAULT now())"
                )
                row = conn.execute("SELECT version FROM stockade_schema").fetchone()
                current = 0 if row is None else int(row[0])
                if current > SCHEMA_VERSION:
                    raise SchemaTooNew(self._where, current, SCHEMA_VERSION)
                if current == SCHEMA_VERSION:
                    return
                for version in range(current + 1, SCHEMA_VERSION + 1):
                    for statement in MIGRATIONS[version]:
                        conn.execute(statement)
                conn.execute(
                    "INSERT INTO stockade_schema (version) VALUES (%s) ON CONFLICT (singleton)"
                    " DO UPDATE SET version = excluded.version, migrated_at = now()",
                    (SCHEMA_VERSION,),
                )
                logger.info(
                    "%s: session-log schema migrated from version %d to %d",
                    self._where,
                    current,
                    SCHEMA_VERSION,
                )
        except self._psycopg.Error as error:
            raise _clear_error(error, self._where, "creating or migrating the schema") from None

    def schema_version(self) -> int:
        """The version the database holds (after migrating it, on first use)."""
        with self._lock:
            holder, _ = self._started()
        row = holder.execute("SELECT version FROM stockade_schema").fetchone()
        return int(row[0])

    def close(self) -> None:
        """Release every connection (and with them any lock still held). Idempotent."""
        self._combiner.stop()
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
            holder, self._holder = self._holder, None
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
        psycopg = self._psycopg
        with self._lock:
            holder, pool = self._started()
            if session_id in self._open:
                raise SessionLocked(session_id, location)
            try:
                (taken,) = holder.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
            except psycopg.Error as error:
                raise _clear_error(error, self._where, "taking the session's lock") from None
            if not taken:
                raise SessionHeldElsewhere(session_id, location, self._holder_of(holder, key))
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
        handle = _PostgresHandle(
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
        psycopg = self._psycopg
        try:
            with pool.connection() as conn, conn.transaction():
                conn.execute(
                    "INSERT INTO stockade_sessions (session_id) VALUES (%s)"
                    " ON CONFLICT (session_id) DO NOTHING",
                    (session_id,),
                )
                epoch, last_seq = conn.execute(
                    "UPDATE stockade_sessions SET epoch = epoch + 1, owner = %s,"
                    " opened_at = now() WHERE session_id = %s RETURNING epoch, last_seq",
                    (self.owner, session_id),
                ).fetchone()
                scan = self._read_scan(conn, session_id, int(last_seq))
        except psycopg.Error as error:
            raise _clear_error(error, self._where, "reading the session's events") from None
        return int(epoch), int(last_seq), scan

    def _read_events(self, conn: Any, session_id: str, last_seq: int) -> Iterator[bytes]:
        """The log as pieces of whole JSON lines (in the caller's transaction): the server
        joins each chunk's lines. Events past `last_seq` (a database edited by hand)
        are read too, so the scan reports them."""
        for setting in _READ_SETTINGS:
            conn.execute(setting)
        cursor = conn.cursor(binary=True)
        start = 0
        while True:
            end = start + _READ_CHUNK if start < last_seq else 2**62
            (chunk,) = cursor.execute(_READ, (session_id, start, end), prepare=True).fetchone()
            if chunk:
                yield bytes(chunk) + b"\n"
            if end >= 2**62:
                return
            start = end

    def _read_scan(self, conn: Any, session_id: str, last_seq: int) -> Scan:
        """Read and scan the log at once: a thread fetches the next piece from the server
        while this one decodes the last (the two costs overlap instead of adding up)."""
        location = self.location_of(session_id)
        pieces: queue.Queue[bytes | BaseException | None] = queue.Queue(maxsize=4)

        def fetch() -> None:
            try:
                for piece in self._read_events(conn, session_id, last_seq):
                    pieces.put(piece)
            except BaseException as error:
                pieces.put(error)
            else:
                pieces.put(None)

        fetcher = threading.Thread(target=fetch, name="stockade-pg-read", daemon=True)
        fetcher.start()
        events: list[SessionEvent] = []
        try:
            with _gc_paused():
                while (piece := pieces.get()) is not None:
                    if isinstance(piece, BaseException):
                        raise piece
                    scan = scan_log(piece, location, self.registry, first_seq=len(events) + 1)
                    if scan.torn is not None:  # a commit is whole: a bad line is corruption
                        where = f"{location}:{scan.torn.line}"
                        raise LogCorrupt(
                            where, f"the stored event is unreadable ({scan.torn.reason})"
                        )
                    events.extend(scan.events)
        finally:
            while fetcher.is_alive():  # drain, so the fetcher never blocks on a full queue
                with contextlib.suppress(queue.Empty):
                    pieces.get(timeout=0.05)
            fetcher.join()
        return Scan(tuple(events), 0, None)

    def _holder_of(self, holder: Any, key: int) -> str:
        """Who holds `key`: the holding backend's application name and start, else the row."""
        high, low = _key_halves(key)
        try:
            row = holder.execute(
                "SELECT a.application_name, a.pid, a.backend_start, a.client_addr"
                " FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid"
                " WHERE l.locktype = 'advisory' AND l.classid = %s::oid AND l.objid = %s::oid"
                " AND l.objsubid = 1 AND l.granted LIMIT 1",
                (high, low),
            ).fetchone()
        except self._psycopg.Error:
            row = None
        if row is None:
            return "another writer (it may have just let go: try again)"
        name, pid, started, address = row
        who = name or "another client"
        who = who.removeprefix("stockade locks (").removesuffix(")")
        via = f" from {address}" if address else ""
        since = f", connected since {started:%Y-%m-%d %H:%M:%S %Z}" if started else ""
        return f"{who} (database backend {pid}{via}{since})"

    def _release(self, session_id: str, key: int, pid: int) -> None:
        with self._lock:
            self._open.discard(session_id)
            holder = self._holder
            if holder is None or holder.closed or holder.broken:
                return  # gone with its connection
            if holder.info.backend_pid != pid:
                return  # taken on an earlier holder, which is gone, and the lock with it
            try:
                holder.execute("SELECT pg_advisory_unlock(%s)", (key,))
            except self._psycopg.Error as error:
                logger.warning("%s: releasing %s's lock failed: %s", self._where, session_id, error)

    # --- append: a group commit across sessions -----------------------------------------

    def _append(self, handle: _PostgresHandle, events: Sequence[SessionEvent]) -> None:
        first = handle.last_seq + 1
        if [event.seq for event in events] != list(range(first, first + len(events))):
            raise StockadeError(
                f"{self.location_of(handle.session_id)}: append of seqs "
                f"{events[0].seq}..{events[-1].seq} after seq {handle.last_seq}"
            )
        lines = self.registry.encode_lines(events).split(b"\n")
        lines.pop()
        pending = _Pending(handle, events, lines)
        self._combiner.submit(pending, self._commit)
        if pending.error is not None:
            raise pending.error
        handle.last_seq += len(events)

    def _commit(self, batch: list[_Pending]) -> None:
        """One statement for every batch in `batch` (one per session); sets each one's error."""
        pool = self._pool
        if pool is None:
            error: BaseException = StockadeError(f"{self._where}: the session-log store was closed")
            for pending in batch:
                pending.error = error
            return
        params: dict[str, list[Any]] = {
            name: []
            for name in (
                "sids", "epochs", "prevs", "lasts", "his", "los", "pids",
                "esids", "seqs", "tss", "types", "datas",
            )
        }  # fmt: skip
        for pending in batch:
            handle = pending.handle
            high, low = _key_halves(handle.key)
            params["sids"].append(handle.session_id)
            params["epochs"].append(handle.epoch)
            params["prevs"].append(handle.last_seq)
            params["lasts"].append(handle.last_seq + len(pending.events))
            params["his"].append(high)
            params["los"].append(low)
            params["pids"].append(handle.holder_pid)
            params["esids"] += [handle.session_id] * len(pending.events)
            params["seqs"] += [event.seq for event in pending.events]
            params["tss"] += [event.ts for event in pending.events]
            params["types"] += [event.tag for event in pending.events]
            params["datas"] += pending.lines
        psycopg = self._psycopg
        try:
            with pool.connection() as conn:
                passed = {row[0] for row in conn.execute(_APPEND, params, prepare=True)}
        except (psycopg.IntegrityError, psycopg.DataError) as error:
            # Rolled back for certain: one bad batch must not fail the others with it.
            if len(batch) > 1:
                for pending in batch:
                    self._commit([pending])
                return
            for pending in batch:
                pending.error = _clear_error(error, self._where, "committing (refused)")
            return
        except psycopg.Error as error:
            failure = _clear_error(
                error, self._where, "committing (whether the batch reached the log is unknown)"
            )
            for pending in batch:
                pending.error = failure
            return
        except Exception as error:  # the pool's own: PoolTimeout, PoolClosed
            failure = _clear_error(error, self._where, "getting a connection")
            for pending in batch:
                pending.error = failure
            return
        with self._count_lock:
            self.commits += 1
        for pending in batch:
            if pending.handle.session_id not in passed:
                sid = pending.handle.session_id
                pending.error = SessionLockLost(
                    f"session {sid!r}: this writer no longer holds its lock "
                    f"({self.location_of(sid)}: its lock connection was lost, or another "
                    "host opened the session since); nothing was appended. Close the "
                    "session and open it again."
                )

    # --- reading without a lock: `stockade session show`, listings ----------------------

    def scan(self, session_id: str) -> Scan:
        """The session's events as they stand, without taking its lock (read-only).

        Raises KeyError when the database has no such session.
        """
        check_session_id(session_id)
        with self._lock:
            _, pool = self._started()
        try:
            with pool.connection() as conn, conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                row = conn.execute(
                    "SELECT last_seq FROM stockade_sessions WHERE session_id = %s", (session_id,)
                ).fetchone()
                if row is None:
                    raise KeyError(session_id)
                return self._read_scan(conn, session_id, int(row[0]))
        except self._psycopg.Error as error:
            raise _clear_error(error, self._where, "reading the session's events") from None

    def _held_keys(self, conn: Any) -> set[tuple[int, int]]:
        return {
            (int(hi), int(lo))
            for hi, lo in conn.execute(
                "SELECT classid, objid FROM pg_locks"
                " WHERE locktype = 'advisory' AND objsubid = 1 AND granted"
            ).fetchall()
        }

    def list_sessions(self, *, defaults: Any) -> list[Any]:
        """`stockade session list` (the catalog protocol of `sessionlog.catalog`).

        The policy columns fold every event but the tool calls and results (the bulk
        of a log, and never a policy event), so a listing costs little per session.
        """
        from .catalog import SessionEntry, policy_summary

        with self._lock:
            _, pool = self._started()
        entries = []
        with pool.connection() as conn:
            rows = conn.execute(
                "SELECT s.session_id, s.last_seq, e.ts FROM stockade_sessions s"
                " LEFT JOIN stockade_events e ON e.session_id = s.session_id"
                " AND e.seq = s.last_seq ORDER BY s.created_at, s.session_id"
            ).fetchall()
            held = self._held_keys(conn)
            cursor = conn.cursor(binary=True)
            for session_id, last_seq, last_ts in rows:
                entry = SessionEntry(
                    session=session_id,
                    location=self.location_of(session_id),
                    last_activity=last_ts,
                    size=None,
                    open=_key_halves(lock_key(session_id)) in held,
                    events=int(last_seq),
                )
                lines = cursor.execute(
                    "SELECT seq, data FROM stockade_events WHERE session_id = %s"
                    " AND type NOT IN ('tool/call', 'tool/result') ORDER BY seq",
                    (session_id,),
                ).fetchall()
                try:
                    events = [
                        self.registry.decode_line(bytes(data), f"{entry.location}:{seq}")
                        for seq, data in lines
                    ]
                    for name, value in policy_summary(events, defaults).items():
                        setattr(entry, name, value)
                except (StockadeError, ValueError) as error:
                    entry.error = {"code": "LOG_CORRUPT", "detail": str(error)}
                entries.append(entry)
        return entries

    def prune_sessions(self, cutoff: float, *, dry_run: bool) -> Any:
        """`stockade session prune`: remove the sessions idle since before `cutoff` that
        no writer holds (each is locked, without waiting, while it is removed)."""
        from .catalog import PruneResult, SessionEntry

        with self._lock:
            holder, pool = self._started()
        with pool.connection() as conn:
            rows = conn.execute(
                "SELECT s.session_id, s.last_seq, coalesce(e.ts, extract(epoch FROM s.created_at))"
                " FROM stockade_sessions s LEFT JOIN stockade_events e"
                " ON e.session_id = s.session_id AND e.seq = s.last_seq"
                " WHERE coalesce(e.ts, extract(epoch FROM s.created_at)) < %s"
                " ORDER BY s.session_id",
                (cutoff,),
            ).fetchall()
        result = PruneResult(removed=[], kept_open=[], failed=[])
        for session_id, last_seq, last_ts in rows:
            entry = SessionEntry(
                session=session_id,
                location=self.location_of(session_id),
                last_activity=float(last_ts),
                size=None,
                open=False,
                events=int(last_seq),
            )
            key = lock_key(session_id)
            with self._lock:
                taken = (
                    session_id not in self._open
                    and holder.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]
                )
            if not taken:
                entry.open = True
                result.kept_open.append(entry)
                continue
            try:
                if not dry_run:
                    with pool.connection() as conn, conn.transaction():
                        gone = conn.execute(
                            "DELETE FROM stockade_sessions WHERE session_id = %s"
                            " AND last_seq = %s RETURNING session_id",
                            (session_id, last_seq),
                        ).fetchone()
                        if gone is None:  # written since it was judged: keep it
                            continue
                        conn.execute(
                            "DELETE FROM stockade_events WHERE session_id = %s", (session_id,)
                        )
                result.removed.append(entry)
            except self._psycopg.Error as error:
                entry.error = {"code": "STORE", "detail": str(error).strip()}
                result.failed.append(entry)
            finally:
                with self._lock:
                    holder.execute("SELECT pg_advisory_unlock(%s)", (key,))
        return result


@attrs.define(eq=False)
class _PostgresHandle:
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


class _Pending:
    """One session's batch waiting for a group commit; `error` set when it failed."""

    __slots__ = ("done", "error", "events", "handle", "lines")

    def __init__(
        self, handle: _PostgresHandle, events: Sequence[SessionEvent], lines: list[bytes]
    ) -> None:
        self.handle = handle
        self.events = events
        self.lines = lines
        self.done = threading.Event()
        self.error: BaseException | None = None


class _Combiner:
    """Group commit across sessions: committer threads, each taking everything queued.

    A writer (a session's worker thread) queues its batch and waits on it alone; a
    free committer takes every batch queued (up to `max_events`) and commits them in
    one statement. A lone append goes at once (one thread hop), and under load each
    statement carries every session's batch that queued while the others ran, with
    no timer and no wait for company. `committers` threads, started on first use.
    """

    def __init__(self, committers: int, max_events: int = 20_000) -> None:
        self.committers = max(1, committers)
        self.max_events = max_events
        self._queue: list[_Pending] = []
        self._cond = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._stopping = False
        self._commit: Any = None

    def submit(self, pending: _Pending, commit: Any) -> None:
        with self._cond:
            if self._stopping:
                pending.error = StockadeError("the session-log store was closed")
                return
            if not self._threads:
                self._commit = commit
                for index in range(self.committers):
                    thread = threading.Thread(
                        target=self._run, name=f"stockade-pg-commit-{index}", daemon=True
                    )
                    thread.start()
                    self._threads.append(thread)
            self._queue.append(pending)
            self._cond.notify()
        pending.done.wait()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stopping:
                    self._cond.wait()
                if not self._queue:
                    return  # stopping, and nothing left to commit
                batch = self._take()
            try:
                self._commit(batch)
            except BaseException as error:  # never leave a writer waiting
                for pending in batch:
                    if pending.error is None:
                        pending.error = error
            finally:
                for pending in batch:
                    pending.done.set()

    def _take(self) -> list[_Pending]:
        count = events = 0
        for pending in self._queue:
            if count and events + len(pending.events) > self.max_events:
                break
            count += 1
            events += len(pending.events)
        batch, self._queue = self._queue[:count], self._queue[count:]
        return batch

    def stop(self) -> None:
        """Commit what is queued, then end the committers."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
            threads, self._threads = self._threads, []
        for thread in threads:
            thread.join()
