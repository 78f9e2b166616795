"""The bytes budget (docs/undo.md, "The bytes budget"): one boundary reads at most
`bytes_budget` bytes of content, the names of one hard-linked file are read once, and
the store takes no content its filesystem has no room for. A command's sparse or linked
files cost the harness a bounded read, not their size at every rewrite (an audit made
100 sparse 32 MiB files cost 20 s and 3.2 GB read per call)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from stockade.history import HistoryConfig, SnapshotStore, Tracker, _index
from stockade.history._walk import Reading, read_file

from ..support import small_filesystem
from .support import Session, write

MIB = 1 << 20


def _sparse(path: str, size: int) -> None:
    with open(path, "wb") as handle:
        handle.truncate(size)


def _recorded(session: Session, paths: list[str]) -> list[str]:
    items = session.last_change.items
    return sorted(p for p in paths if items[p][1] is not None and items[p][1].recorded)


def _reasons(session: Session) -> set[str | None]:
    return {after.unrecorded for _, after in session.last_change.items.values() if after}


def test_a_boundary_reads_at_most_the_bytes_budget(root, open_tracker):
    """Forty sparse files of 1 MiB under a 4 MiB budget: four are read and recorded, the
    rest reported and left unread. The control: a budget that does not bind reads all."""
    names = [f"f{i:02}" for i in range(40)]

    def make() -> None:
        for name in names:
            _sparse(f"{root}/{name}", MIB)

    session = Session(open_tracker(file_budget=MIB, bytes_budget=4 * MIB))
    session.call(make)
    assert session.last_change.created == names  # every change is still reported
    assert len(_recorded(session, names)) == 4
    assert _reasons(session) == {None, "past the byte budget of one look (bytes_budget)"}


def test_the_control_reads_everything_under_a_budget_that_does_not_bind(root, open_tracker):
    names = [f"f{i:02}" for i in range(40)]
    session = Session(open_tracker(file_budget=MIB, bytes_budget=1 << 30))
    session.call(lambda: [_sparse(f"{root}/{name}", MIB) for name in names])
    assert _recorded(session, names) == names


def test_every_boundary_has_its_own_budget_and_an_unread_file_stays_so_until_it_changes(
    root, open_tracker, monkeypatch
):
    # Files read within two seconds of their last change are read again at the next
    # boundaries (a same-tick write leaves their times): that would spend the budget here.
    monkeypatch.setattr(_index, "RACY_NS", 0)
    session = Session(open_tracker(file_budget=MIB, bytes_budget=2 * MIB))
    names = ["f0", "f1", "f2"]
    session.call(lambda: [_sparse(f"{root}/{name}", MIB) for name in names])
    read = _recorded(session, names)
    assert len(read) == 2  # which two: the order the kernel lists them in
    (unread,) = set(names) - set(read)
    # Nothing changed: the unread file is not read now, nor reported as modified.
    session.call(lambda: None)
    assert not session.last_change
    # Changed, it is read within the new boundary's budget.
    session.call(lambda: write(f"{root}/{unread}", b"now read"))
    assert session.last_change.modified == [unread]
    assert _recorded(session, [unread]) == [unread]


def test_the_names_of_one_hard_linked_file_are_read_once(root, open_tracker):
    """A 1 MiB file with ten names under a 2 MiB budget: read once, every name recorded.
    Read per name, the budget would end after two."""
    names = ["big", *(f"l{i}" for i in range(9))]

    def make() -> None:
        write(f"{root}/big", os.urandom(MIB))
        for name in names[1:]:
            os.link(f"{root}/big", f"{root}/{name}")

    session = Session(open_tracker(file_budget=2 * MIB, bytes_budget=2 * MIB))
    session.call(make)
    assert _recorded(session, names) == sorted(names)
    digests = {session.last_change.items[name][1].digest for name in names}
    assert len(digests) == 1


def test_a_file_read_past_what_is_left_is_not_kept(root, open_tracker):
    """A file that grows between its look and its read counts what was read, and is
    left unrecorded rather than half kept."""
    session = Session(open_tracker(file_budget=8 * MIB, bytes_budget=MIB + MIB // 2))

    def make() -> None:
        write(f"{root}/a", os.urandom(MIB))
        write(f"{root}/b", os.urandom(MIB))

    session.call(make)
    assert len(_recorded(session, ["a", "b"])) == 1
    unread = [p for p in ("a", "b") if not session.last_change.items[p][1].recorded]
    content = Path(root, unread[0]).read_bytes()
    assert not session.tracker.store.has(hashlib.sha256(content).hexdigest())


@pytest.fixture
def small_store(tmp_path) -> Iterator[SnapshotStore]:
    """A snapshot store on a 64 MiB tmpfs of its own (mounted as root)."""
    with small_filesystem(tmp_path / "small", "64m") as path:
        store = SnapshotStore.open(str(path / "history"))
        try:
            yield store
        finally:
            store.close()


def test_the_store_takes_no_content_its_filesystem_has_no_room_for(root, small_store):
    """64 MiB for the store, 60.8 MiB of it usable, half of that for one boundary (its
    write-ahead log holds it once more until a checkpoint): of three 12 MiB files two
    are read, the third is reported with the reason (the budget alone reads all three),
    and the store's writes all succeed."""
    tracker = Tracker.open(root, small_store, HistoryConfig(file_budget=32 * MIB))
    try:
        session = Session(tracker)
        session.call(lambda: [write(f"{root}/f{i}", os.urandom(12 * MIB)) for i in range(3)])
        assert len(_recorded(session, ["f0", "f1", "f2"])) == 2
        assert "no room for it on the snapshot store's filesystem" in _reasons(session)
        assert small_store.room() > 0  # the kept room was kept
    finally:
        tracker.close()


def test_a_full_store_filesystem_leaves_nothing_negative_and_reads_empty_files(root):
    class Full:
        def room(self) -> int:
            return -(1 << 30)  # below the room kept

    reading = Reading.of(256 * MIB, Full())  # type: ignore[arg-type]
    assert reading.left == 0 and reading.why == "no room for it on the snapshot store's filesystem"
    write(f"{root}/empty", b"")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        st = os.stat("empty", dir_fd=fd)
        known = read_file(fd, "empty", st, MIB, None, reading)
    finally:
        os.close(fd)
    assert known is not None and known.entry.digest is not None  # read: it holds nothing
