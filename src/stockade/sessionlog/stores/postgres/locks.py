"""One writer per session, across hosts: the session locks and the epoch that fences.

Opening a session takes a session-level advisory lock (`pg_try_advisory_lock`) on
the store's one *holder* connection: one per store (per host), whatever the number
of sessions. A lock held by a backend is released when it unlocks or when the
backend ends, and a backend ends when its client's connection does (at once on a
Unix socket or a closed TCP connection; for a host that vanished, after the TCP
keepalives the holder sets: about 30 s). So a killed or partitioned host frees its
sessions by itself, with no lease to renew and no clock to trust; that is why this
store uses an advisory lock rather than a lease row with an expiry.

An append commits only when, at that moment, (1) the holder's backend still holds
the session's lock (`pg_locks`), (2) the session row still carries the epoch this
open took, and (3) the log still ends at the seq the writer expects; otherwise it
changes nothing and the writer raises `SessionLockLost` (the gate itself is part of
the group-commit statement, commit.py). The epoch is a fencing token: every open
bumps it under the session row's lock (`claim`), and an append updates that row in
its own transaction, so an open on another host either sees a racing append (it
committed first) or makes it fail (the epoch moved). A writer that lost its lock
never appends.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ....errors import StockadeError
from ..interface import SessionLocked
from .schema import NAMESPACE


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
    digest = hashlib.blake2b(NAMESPACE + session_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def key_halves(key: int) -> tuple[int, int]:
    """How pg_locks shows a bigint key: high half in `classid`, low half in `objid`."""
    unsigned = key & 0xFFFF_FFFF_FFFF_FFFF
    return unsigned >> 32, unsigned & 0xFFFF_FFFF


def try_lock(holder: Any, key: int) -> bool:
    """Take `key` on the holder connection without waiting; whether it was taken."""
    return bool(holder.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0])


def unlock(holder: Any, key: int) -> None:
    holder.execute("SELECT pg_advisory_unlock(%s)", (key,))


def held_keys(conn: Any) -> set[tuple[int, int]]:
    """The (classid, objid) of every advisory lock granted now, by anyone."""
    return {
        (int(hi), int(lo))
        for hi, lo in conn.execute(
            "SELECT classid, objid FROM pg_locks"
            " WHERE locktype = 'advisory' AND objsubid = 1 AND granted"
        ).fetchall()
    }


def claim(conn: Any, session_id: str, owner: str) -> tuple[int, int]:
    """Bump the session's epoch (fencing out any earlier writer), creating its row when
    missing, in the caller's transaction: (epoch, last_seq)."""
    conn.execute(
        "INSERT INTO stockade_sessions (session_id) VALUES (%s)"
        " ON CONFLICT (session_id) DO NOTHING",
        (session_id,),
    )
    epoch, last_seq = conn.execute(
        "UPDATE stockade_sessions SET epoch = epoch + 1, owner = %s,"
        " opened_at = now() WHERE session_id = %s RETURNING epoch, last_seq",
        (owner, session_id),
    ).fetchone()
    return int(epoch), int(last_seq)


def holder_of(holder: Any, key: int, psycopg: Any) -> str:
    """Who holds `key`: the holding backend's application name and start, else the row."""
    high, low = key_halves(key)
    try:
        row = holder.execute(
            "SELECT a.application_name, a.pid, a.backend_start, a.client_addr"
            " FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid"
            " WHERE l.locktype = 'advisory' AND l.classid = %s::oid AND l.objid = %s::oid"
            " AND l.objsubid = 1 AND l.granted LIMIT 1",
            (high, low),
        ).fetchone()
    except psycopg.Error:
        row = None
    if row is None:
        return "another writer (it may have just let go: try again)"
    name, pid, started, address = row
    who = name or "another client"
    who = who.removeprefix("stockade locks (").removesuffix(")")
    via = f" from {address}" if address else ""
    since = f", connected since {started:%Y-%m-%d %H:%M:%S %Z}" if started else ""
    return f"{who} (database backend {pid}{via}{since})"
