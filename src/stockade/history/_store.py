"""A root's snapshot store: file contents and change manifests by SHA-256 (zlib'd, each
once whatever sessions hold it), and what was last known of the root, in one SQLite file.

One file on purpose: a boundary's new objects, its manifest and the root's new state
commit together with one fsync, however many files changed (docs/decisions.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import threading
import zlib
from collections.abc import Iterator, Mapping

import msgspec

from ..errors import StockadeError
from ._index import Known
from ._model import Entry, Pair, decode_manifest, encode_manifest

DATABASE = "history.sqlite"
_SCHEMA = """
create table if not exists objects (id text primary key, size integer not null, data blob not null);
create table if not exists known (
    path blob primary key, entry blob not null, key blob, checked integer not null
) without rowid;
create table if not exists meta (key text primary key, value text not null) without rowid;
"""
_entry_encoder = msgspec.msgpack.Encoder()
_entry_decoder = msgspec.msgpack.Decoder(Entry)


# What the store and an undo leave free on a filesystem beside what they write: 256 MiB,
# or a twentieth of a smaller filesystem.
ROOM_KEPT = 256 << 20


def room_left(info: os.statvfs_result) -> int:
    """How many bytes an unprivileged writer may still write on the filesystem `info`
    describes and leave ROOM_KEPT free (root's own reserve is never counted)."""
    free = info.f_bavail * info.f_frsize
    return free - min(ROOM_KEPT, info.f_blocks * info.f_frsize // 20)


class StoreError(StockadeError):
    """The snapshot store cannot be used (its place is not allowed, or it is damaged)."""


def digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class SnapshotStore:
    """One root's store, at a directory the caller names (outside every writable root).

    Safe to share between threads (one lock) and between processes (SQLite's own
    locking); every write happens inside `batch()`, which commits durably on exit.
    """

    def __init__(self, directory: str, connection: sqlite3.Connection) -> None:
        self.directory = directory
        self._db = connection
        self._lock = threading.RLock()
        self._depth = 0
        self._writing = False

    @classmethod
    def open(cls, directory: str) -> SnapshotStore:
        directory = os.path.realpath(directory)
        os.makedirs(directory, mode=0o700, exist_ok=True)
        path = os.path.join(directory, DATABASE)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        os.close(fd)
        try:
            db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
            db.execute("pragma journal_mode=wal")
            db.execute("pragma synchronous=full")
            db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as error:
            raise StoreError(f"the snapshot store at {path} cannot be opened: {error}") from None
        return cls(directory, db)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Every write inside commits together, durably (one fsync), when the outermost
        batch ends; a batch that wrote nothing costs nothing."""
        with self._lock:
            self._depth += 1
            try:
                yield
            except BaseException:
                self._depth -= 1
                if self._depth == 0 and self._writing:
                    self._writing = False
                    self._db.execute("rollback")
                raise
            self._depth -= 1
            if self._depth == 0 and self._writing:
                self._writing = False
                self._db.execute("commit")

    def _write(self, sql: str, parameters: object = ()) -> None:
        if not self._writing:
            self._db.execute("begin immediate")
            self._writing = self._depth > 0
        self._db.execute(sql, parameters)  # type: ignore[arg-type]
        if not self._writing:
            self._db.execute("commit")

    # --- objects ---------------------------------------------------------------------------

    def room(self) -> int:
        """How many bytes of content the store may still take (room_left of its
        filesystem; unbounded when the filesystem cannot say)."""
        try:
            return room_left(os.statvfs(self.directory))
        except OSError:
            return 1 << 62

    def has(self, digest: str) -> bool:
        with self._lock:
            row = self._db.execute("select 1 from objects where id = ?", (digest,)).fetchone()
        return row is not None

    def put(self, digest: str, data: bytes) -> None:
        """Keep `data` (whose SHA-256 is `digest`) unless it is already there."""
        with self._lock:
            self._write(
                "insert or ignore into objects (id, size, data) values (?, ?, ?)",
                (digest, len(data), zlib.compress(data, 1)),
            )

    def get(self, digest: str) -> bytes:
        """The object's bytes, checked against its name."""
        with self._lock:
            row = self._db.execute("select data from objects where id = ?", (digest,)).fetchone()
        if row is None:
            raise StoreError(f"the snapshot store at {self.directory} lacks object {digest}")
        data = zlib.decompress(row[0])
        if digest_of(data) != digest:
            raise StoreError(f"object {digest} in {self.directory} does not match its digest")
        return data

    def put_change(self, items: Mapping[str, Pair]) -> str:
        """Keep a change's full list; its name (a manifest id)."""
        data = encode_manifest(items)
        digest = digest_of(data)
        self.put(digest, data)
        return digest

    def change(self, manifest: str) -> dict[str, Pair]:
        return decode_manifest(self.get(manifest))

    def size(self) -> tuple[int, int]:
        """(objects, bytes as stored) in the store."""
        with self._lock:
            count, stored = self._db.execute(
                "select count(*), coalesce(sum(length(data)), 0) from objects"
            ).fetchone()
        return int(count), int(stored)

    # --- what was last known of the root ---------------------------------------------------

    def known(self, identity: str) -> dict[str, Known]:
        """The root's state as last recorded under the same configuration ({} if none)."""
        with self._lock:
            row = self._db.execute("select value from meta where key = 'identity'").fetchone()
            if row is None or row[0] != identity:
                return {}
            rows = self._db.execute("select path, entry, key, checked from known").fetchall()
        out: dict[str, Known] = {}
        for path, entry, key, checked in rows:
            out[os.fsdecode(path)] = Known(_entry_decoder.decode(entry), key, checked)
        return out

    def remember(self, identity: str, updates: Mapping[str, Known | None], *, whole: bool) -> None:
        """Record the root's new state of these paths (None: gone); `whole`: they are all
        of it, so anything else known is forgotten."""
        if not updates and not whole:
            return
        with self._lock, self.batch():
            row = self._db.execute("select value from meta where key = 'identity'").fetchone()
            if whole or row is None or row[0] != identity:
                self._write("delete from known")
                self._write(
                    "insert or replace into meta (key, value) values ('identity', ?)", (identity,)
                )
            for path, known in updates.items():
                if known is None:
                    self._write("delete from known where path = ?", (os.fsencode(path),))
                else:
                    self._write(
                        "insert or replace into known values (?, ?, ?, ?)",
                        (
                            os.fsencode(path),
                            _entry_encoder.encode(known.entry),
                            known.key,
                            known.checked_ns,
                        ),
                    )
