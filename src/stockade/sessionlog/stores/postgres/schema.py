"""The PostgreSQL store's schema: its tables, their migrations, and the version check.

Created or migrated on first use, under a transaction-level advisory lock so two
hosts starting at once do not race; `stockade_schema` holds the version. A
database whose schema is newer than this code is refused (`SchemaTooNew`): a
downgrade never rewrites it.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from typing import Any, Final

from ....errors import StockadeError

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
# application there: the session locks' keys and this one are hashes under a
# namespace of our own.
NAMESPACE: Final = b"stockade.sessionlog.v1\x00"
_MIGRATION_KEY: Final = int.from_bytes(
    hashlib.blake2b(NAMESPACE + b"schema", digest_size=8).digest(), "big", signed=True
)


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


def migrate(conn: Any, where: str) -> None:
    """Bring the database `conn` (autocommit) reaches to `SCHEMA_VERSION`, or refuse a
    newer one. psycopg's errors pass through (the caller words them)."""
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
            raise SchemaTooNew(where, current, SCHEMA_VERSION)
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
            where,
            current,
            SCHEMA_VERSION,
        )


def schema_version(conn: Any) -> int:
    """The version the database holds (read, not migrated)."""
    row = conn.execute("SELECT version FROM stockade_schema").fetchone()
    return int(row[0])
