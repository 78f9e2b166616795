"""Reading a log back from PostgreSQL: the server joins the lines, a thread fetches ahead.

The same bytes per event as the JSON-lines store (each event's JSON line) and the
same reader (`scan_log`), so replay and fold are identical by construction; the
log is read in chunks of whole lines, in seq order, on the primary key's range
scan, while the previous chunk decodes.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Iterator
from typing import Any, Final

from ....events import EventRegistry, LogCorrupt, SessionEvent
from ..._scan import Scan, _gc_paused, scan_log

# Events per chunk when reading a log back: the server concatenates a chunk's lines.
READ_CHUNK: Final = 20_000
# Reading a log back: the primary key's range scan, in seq order, joined by the server.
READ: Final = """
SELECT string_agg(data, '\\x0a'::bytea) FROM (
    SELECT data FROM stockade_events WHERE session_id = %s AND seq > %s AND seq <= %s
    ORDER BY seq
) AS chunk
"""
# The plan that read is written for (the planner may guess a sort from stale statistics).
READ_SETTINGS: Final = (
    "SET LOCAL enable_seqscan = off",
    "SET LOCAL enable_bitmapscan = off",
    "SET LOCAL max_parallel_workers_per_gather = 0",
    "SET LOCAL jit = off",
)


def read_events(conn: Any, session_id: str, last_seq: int) -> Iterator[bytes]:
    """The log as pieces of whole JSON lines (in the caller's transaction): the server
    joins each chunk's lines. Events past `last_seq` (a database edited by hand)
    are read too, so the scan reports them."""
    for setting in READ_SETTINGS:
        conn.execute(setting)
    cursor = conn.cursor(binary=True)
    start = 0
    while True:
        end = start + READ_CHUNK if start < last_seq else 2**62
        (chunk,) = cursor.execute(READ, (session_id, start, end), prepare=True).fetchone()
        if chunk:
            yield bytes(chunk) + b"\n"
        if end >= 2**62:
            return
        start = end


def read_scan(
    conn: Any, session_id: str, last_seq: int, location: str, registry: EventRegistry
) -> Scan:
    """Read and scan the log at once: a thread fetches the next piece from the server
    while this one decodes the last (the two costs overlap instead of adding up)."""
    pieces: queue.Queue[bytes | BaseException | None] = queue.Queue(maxsize=4)

    def fetch() -> None:
        try:
            for piece in read_events(conn, session_id, last_seq):
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
                scan = scan_log(piece, location, registry, first_seq=len(events) + 1)
                if scan.torn is not None:  # a commit is whole: a bad line is corruption
                    where = f"{location}:{scan.torn.line}"
                    raise LogCorrupt(where, f"the stored event is unreadable ({scan.torn.reason})")
                events.extend(scan.events)
    finally:
        while fetcher.is_alive():  # drain, so the fetcher never blocks on a full queue
            with contextlib.suppress(queue.Empty):
                pieces.get(timeout=0.05)
        fetcher.join()
    return Scan(tuple(events), 0, None)
