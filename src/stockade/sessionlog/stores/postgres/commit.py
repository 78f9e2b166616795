"""The group commit: every waiting session's batch in one statement, behind its gate.

Appends go through the pool (any connection), as one statement, so one round trip
and one transaction (one WAL flush) per group commit, whatever the number of
sessions whose writers wait. Each session's batch goes in only if its gate holds
(its lock is held by its holder's backend, its epoch and last seq are the ones its
writer expects: locks.py says why); the statement returns the sessions that went
in, and every other one's writer raises `SessionLockLost`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

from ....errors import StockadeError
from ....events import SessionEvent
from .connections import clear_error
from .locks import SessionLockLost, key_halves

if TYPE_CHECKING:
    from .store import PostgresHandle

# One group commit: the batches of every session whose writer is waiting, in one
# statement (one round trip, one transaction, one WAL flush). The lock table is read
# once; each session's batch goes in only if its gate holds; the ids that went in
# come back.
APPEND: Final = """
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


class Pending:
    """One session's batch waiting for a group commit; `error` set when it failed."""

    __slots__ = ("done", "error", "events", "handle", "lines")

    def __init__(
        self, handle: PostgresHandle, events: Sequence[SessionEvent], lines: list[bytes]
    ) -> None:
        self.handle = handle
        self.events = events
        self.lines = lines
        self.done = threading.Event()
        self.error: BaseException | None = None


def commit_batch(
    batch: list[Pending],
    pool: Any,
    *,
    psycopg: Any,
    where: str,
    location_of: Callable[[str], str],
) -> int:
    """One statement for every batch in `batch` (one per session); sets each one's
    error. How many statements committed (a refused group is retried one by one)."""
    if pool is None:
        error: BaseException = StockadeError(f"{where}: the session-log store was closed")
        for pending in batch:
            pending.error = error
        return 0
    params: dict[str, list[Any]] = {
        name: []
        for name in (
            "sids", "epochs", "prevs", "lasts", "his", "los", "pids",
            "esids", "seqs", "tss", "types", "datas",
        )
    }  # fmt: skip
    for pending in batch:
        handle = pending.handle
        high, low = key_halves(handle.key)
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
    try:
        with pool.connection() as conn:
            passed = {row[0] for row in conn.execute(APPEND, params, prepare=True)}
    except (psycopg.IntegrityError, psycopg.DataError) as error:
        # Rolled back for certain: one bad batch must not fail the others with it.
        if len(batch) > 1:
            return sum(
                commit_batch([pending], pool, psycopg=psycopg, where=where, location_of=location_of)
                for pending in batch
            )
        for pending in batch:
            pending.error = clear_error(error, where, "committing (refused)")
        return 0
    except psycopg.Error as error:
        failure = clear_error(
            error, where, "committing (whether the batch reached the log is unknown)"
        )
        for pending in batch:
            pending.error = failure
        return 0
    except Exception as error:  # the pool's own: PoolTimeout, PoolClosed
        failure = clear_error(error, where, "getting a connection")
        for pending in batch:
            pending.error = failure
        return 0
    for pending in batch:
        if pending.handle.session_id not in passed:
            sid = pending.handle.session_id
            pending.error = SessionLockLost(
                f"session {sid!r}: this writer no longer holds its lock "
                f"({location_of(sid)}: its lock connection was lost, or another "
                "host opened the session since); nothing was appended. Close the "
                "session and open it again."
            )
    return 1


class Combiner:
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
        self._queue: list[Pending] = []
        self._cond = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._stopping = False
        self._commit: Any = None

    def submit(self, pending: Pending, commit: Callable[[list[Pending]], None]) -> None:
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

    def _take(self) -> list[Pending]:
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
