"""Sessions and processes on one root: each session's history is its own log, the
objects are shared (stored once), and a harness started again knows what the earlier
one recorded and what changed while nothing watched."""

from __future__ import annotations

import os

from stockade.history import HistoryConfig, Tracker

from .support import Session, write


def _read(path: str) -> str:
    with open(path) as handle:
        return handle.read()


def test_two_sessions_on_one_root_keep_their_own_histories(root, open_tracker):
    write(f"{root}/shared.txt", "start\n")
    tracker = open_tracker()
    one, two = Session(tracker), Session(tracker)
    first = one.call(lambda: write(f"{root}/a.txt", "from one\n"))
    second = two.call(lambda: write(f"{root}/b.txt", "from two\n"))
    assert [r.changes.keys() for r in one.records()] == [{"a.txt"}]
    assert [r.changes.keys() for r in two.records()] == [{"b.txt"}]
    # Each undoes its own call, and only that.
    assert not one.undo(first)[0].blocked
    assert not os.path.exists(f"{root}/a.txt") and os.path.exists(f"{root}/b.txt")
    # One session's windows are not in the other's history...
    assert [r.changes.keys() for r in two.records()] == [{"b.txt"}]
    # ...but what one changed of the other's files blocks the other's undo.
    one.call(lambda: write(f"{root}/b.txt", "one wrote over it\n"))
    plan, _ = two.undo(second)
    assert plan.blocked and "outside this session's record" in str(plan.conflicts[0])
    assert _read(f"{root}/b.txt") == "one wrote over it\n"


def test_sessions_share_objects(root, store, open_tracker):
    tracker = open_tracker()
    one, two = Session(tracker), Session(tracker)
    one.call(lambda: write(f"{root}/a.txt", "the same content\n"))
    objects, _ = store.size()
    two.call(lambda: write(f"{root}/b.txt", "the same content\n"))
    assert store.size()[0] == objects + 1  # its manifest; the content was there


def test_a_second_process_on_the_root_stores_nothing_again(root, store, open_tracker):
    for i in range(50):
        write(f"{root}/d/{i}.txt", f"file {i}\n")
    open_tracker()
    objects = store.size()
    other = open_tracker()
    assert store.size() == objects
    assert len(other.index) == 51


def test_a_restarted_harness_undoes_a_call_of_the_earlier_one(root, store, method):
    config = HistoryConfig(watch=method == "watch")
    write(f"{root}/kept.txt", "kept\n")
    tracker = Tracker.open(root, store, config)
    session = Session(tracker)
    call = session.call(lambda: write(f"{root}/kept.txt", "changed by the call\n"))
    tracker.close()
    write(f"{root}/edited.txt", "while nothing watched\n")

    again = Tracker.open(root, store, config)
    try:
        resumed = Session(again, events=list(session.events), seq=session.seq)
        resumed.call(lambda: None)
        outside = resumed.records()[-1]
        assert outside.kind == "outside" and set(outside.changes) == {"edited.txt"}
        plan, applied = resumed.undo(call)
        assert not plan.blocked, plan.conflicts
        assert applied is not None and not applied.left
        assert _read(f"{root}/kept.txt") == "kept\n"
        assert _read(f"{root}/edited.txt") == "while nothing watched\n"
    finally:
        again.close()


def test_an_ignore_rule_changed_while_nothing_watched_is_not_a_deletion(root, store):
    write(f"{root}/x.tmp", "scratch")
    write(f"{root}/y.txt", "kept")
    Tracker.open(root, store).close()
    write(f"{root}/.gitignore", "*.tmp\n")
    again = Tracker.open(root, store)
    try:
        assert set(again.before().outside.items) == {".gitignore"}
    finally:
        again.close()
