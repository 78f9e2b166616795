"""What an undo must never do: follow a symlink a later call planted out of the root,
write through a hard link to a file elsewhere, put back half of a file it could not
record, or keep its store where a command could rewrite it."""

from __future__ import annotations

import hashlib
import os
import zlib

import pytest

from stockade.history import HistoryConfig, HistoryError, SnapshotStore, StoreError, Tracker

from .support import Session, tree_state, write


@pytest.fixture
def outside(tmp_path) -> str:
    path = tmp_path / "outside"
    path.mkdir()
    (path / "f").write_text("the person's own file\n")
    return str(path)


def _read(path: str) -> str:
    with open(path) as handle:
        return handle.read()


def _plant(root: str, outside: str, session: Session) -> tuple[int, int]:
    """Call 1 edits d/f; call 2 replaces d with a symlink to a directory outside."""
    write(f"{root}/d/f", "before call 1\n")
    first = session.call(lambda: write(f"{root}/d/f", "written by call 1\n"))

    def plant() -> None:
        os.unlink(f"{root}/d/f")
        os.rmdir(f"{root}/d")
        os.symlink(outside, f"{root}/d")

    second = session.call(plant)
    return first, second


def test_a_planted_symlink_cannot_lead_a_restore_out_of_the_root(root, outside, open_tracker):
    session = Session(open_tracker())
    before_outside = tree_state(outside)
    first, _ = _plant(root, outside, session)
    plan, applied = session.restore(first)
    assert not plan.blocked, plan.conflicts
    assert applied is not None and not applied.left
    assert tree_state(outside) == before_outside  # nothing written there
    assert not os.path.islink(f"{root}/d") and os.path.isdir(f"{root}/d")
    assert _read(f"{root}/d/f") == "before call 1\n"


def test_the_control_a_naive_restore_of_the_same_plan_writes_outside(root, outside, open_tracker):
    session = Session(open_tracker())
    first, _ = _plant(root, outside, session)
    plan = session.tracker.plan_restore(session.records(), first)
    # What a restore by path would do: open the recorded path and write the old bytes.
    target = plan.targets["d/f"]
    assert target is not None and target.digest is not None
    with open(os.path.join(root, "d/f"), "wb") as handle:
        handle.write(session.tracker.store.get(target.digest))
    assert _read(f"{outside}/f") == "before call 1\n"  # the person's file is gone


def test_a_forced_undo_through_a_planted_symlink_leaves_the_path(root, outside, open_tracker):
    session = Session(open_tracker())
    before_outside = tree_state(outside)
    first, second = _plant(root, outside, session)
    plan, applied = session.undo(first, force=True)
    assert plan.blocked and f"call {second}" in str(plan.conflicts[0])
    assert applied is not None
    assert [path for path, _ in applied.left] == ["d/f"]
    assert "link is not followed" in applied.left[0][1]
    assert tree_state(outside) == before_outside


def test_a_restore_never_writes_through_a_hard_link(root, outside, open_tracker):
    session = Session(open_tracker())
    write(f"{root}/shared.txt", "old\n")
    call = session.call(lambda: write(f"{root}/shared.txt", "new\n"))
    os.link(f"{root}/shared.txt", f"{outside}/alias")  # between calls
    plan, applied = session.undo(call)
    assert not plan.blocked and applied is not None and not applied.left
    assert _read(f"{root}/shared.txt") == "old\n"
    assert _read(f"{outside}/alias") == "new\n"  # a name elsewhere keeps its content


def test_a_file_over_the_budget_is_not_recorded_and_never_half_put_back(root, open_tracker):
    big = b"x" * 4096
    write(f"{root}/big.bin", big)
    write(f"{root}/small.txt", "small\n")
    session = Session(open_tracker(file_budget=1024))

    def grow() -> None:
        with open(f"{root}/big.bin", "ab") as handle:
            handle.write(b"y" * 100)
        write(f"{root}/small.txt", "changed\n")

    call = session.call(grow)
    change = session.last_change
    assert change.modified == ["big.bin", "small.txt"]
    assert change.unrecorded == ["big.bin"]
    assert session.events[-1].change.unrecorded_paths == ("big.bin",)
    store = session.tracker.store
    assert not store.has(hashlib.sha256(big).hexdigest())
    plan, applied = session.undo(call)
    assert plan.unrecorded == ("big.bin",) and "big.bin" not in plan.targets
    assert applied is not None and not applied.left
    with open(f"{root}/big.bin", "rb") as handle:
        assert handle.read() == big + b"y" * 100  # left whole, as the call left it
    assert _read(f"{root}/small.txt") == "small\n"


def test_a_deleted_file_over_the_budget_is_not_made_again(root, open_tracker):
    write(f"{root}/big.bin", b"x" * 4096)
    session = Session(open_tracker(file_budget=1024))
    call = session.call(lambda: os.unlink(f"{root}/big.bin"))
    plan, _ = session.undo(call)
    assert plan.unrecorded == ("big.bin",)
    assert not os.path.exists(f"{root}/big.bin")


def test_a_file_over_the_budget_that_a_call_made_is_removed_by_its_undo(root, open_tracker):
    session = Session(open_tracker(file_budget=1024))
    call = session.call(lambda: write(f"{root}/big.bin", b"x" * 4096))
    assert session.last_change.unrecorded == ["big.bin"]
    plan, applied = session.undo(call)
    assert not plan.blocked and applied is not None and applied.done == ("big.bin",)
    assert not os.path.exists(f"{root}/big.bin")


def test_a_store_inside_the_root_is_refused(root):
    store = SnapshotStore.open(os.path.join(root, ".history"))
    try:
        with pytest.raises(HistoryError, match="inside the root"):
            Tracker.open(root, store, HistoryConfig())
    finally:
        store.close()


def test_the_store_file_is_private(store):
    assert os.stat(store.directory).st_mode & 0o077 == 0
    database = os.path.join(store.directory, "history.sqlite")
    assert os.stat(database).st_mode & 0o077 == 0


def test_a_damaged_object_is_refused_before_anything_is_written(root, open_tracker):
    session = Session(open_tracker())
    write(f"{root}/a", "old a")
    write(f"{root}/f", "old")
    call = session.call(lambda: (write(f"{root}/a", "new a"), write(f"{root}/f", "new")))
    store = session.tracker.store
    with store.batch():
        store._db.execute(
            "update objects set data = ? where id = ?",
            (zlib.compress(b"evil"), hashlib.sha256(b"old").hexdigest()),
        )
    with pytest.raises(StoreError, match="does not match its digest"):
        session.undo(call)
    assert (_read(f"{root}/a"), _read(f"{root}/f")) == ("new a", "new")
