"""`stockade session list` and `prune` on PostgreSQL: the catalog protocol's two methods.

What `sessionlog.catalog` asks of a store (`list_sessions`, `prune_sessions`), read
from the sessions table, the events and the lock table; a session is open while
some backend holds its lock, and pruning takes that lock (without waiting) for the
time it removes the session, as the JSON-lines catalog takes the file's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ....errors import StockadeError
from ....events import EventRegistry
from .locks import held_keys, key_halves, lock_key, try_lock, unlock

if TYPE_CHECKING:
    from ...catalog import PruneResult, SessionEntry
    from .connections import Connections


def list_sessions(
    connections: Connections,
    *,
    registry: EventRegistry,
    location_of: Callable[[str], str],
    defaults: Any,
) -> list[SessionEntry]:
    """Every session in the database, oldest first.

    The policy columns fold every event but the tool calls and results (the bulk
    of a log, and never a policy event), so a listing costs little per session.
    """
    from ...catalog import SessionEntry, policy_summary

    with connections.lock:
        _, pool = connections.started()
    entries = []
    with pool.connection() as conn:
        rows = conn.execute(
            "SELECT s.session_id, s.last_seq, e.ts FROM stockade_sessions s"
            " LEFT JOIN stockade_events e ON e.session_id = s.session_id"
            " AND e.seq = s.last_seq ORDER BY s.created_at, s.session_id"
        ).fetchall()
        held = held_keys(conn)
        cursor = conn.cursor(binary=True)
        for session_id, last_seq, last_ts in rows:
            entry = SessionEntry(
                session=session_id,
                location=location_of(session_id),
                last_activity=last_ts,
                size=None,
                open=key_halves(lock_key(session_id)) in held,
                events=int(last_seq),
            )
            lines = cursor.execute(
                "SELECT seq, data FROM stockade_events WHERE session_id = %s"
                " AND type NOT IN ('tool/call', 'tool/result') ORDER BY seq",
                (session_id,),
            ).fetchall()
            try:
                events = [
                    registry.decode_line(bytes(data), f"{entry.location}:{seq}")
                    for seq, data in lines
                ]
                for name, value in policy_summary(events, defaults).items():
                    setattr(entry, name, value)
            except (StockadeError, ValueError) as error:
                entry.error = {"code": "LOG_CORRUPT", "detail": str(error)}
            entries.append(entry)
    return entries


def prune_sessions(
    connections: Connections,
    open_here: set[str],
    cutoff: float,
    *,
    dry_run: bool,
    location_of: Callable[[str], str],
) -> PruneResult:
    """Remove the sessions idle since before `cutoff` that no writer holds (each is
    locked, without waiting, while it is removed). `open_here`: the sessions this
    store holds itself (read under `connections.lock`)."""
    from ...catalog import PruneResult, SessionEntry

    psycopg = connections.psycopg
    with connections.lock:
        holder, pool = connections.started()
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
            location=location_of(session_id),
            last_activity=float(last_ts),
            size=None,
            open=False,
            events=int(last_seq),
        )
        key = lock_key(session_id)
        with connections.lock:
            taken = session_id not in open_here and try_lock(holder, key)
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
                    conn.execute("DELETE FROM stockade_events WHERE session_id = %s", (session_id,))
            result.removed.append(entry)
        except psycopg.Error as error:
            entry.error = {"code": "STORE", "detail": str(error).strip()}
            result.failed.append(entry)
        finally:
            with connections.lock:
                unlock(holder, key)
    return result
