"""Watching must be true, not usually true: every change a call makes is in its Change,
whichever way it was made (a moved directory, a hard link from outside the root, a
descriptor opened before the call, a shared mapping, more events than the kernel
queues), and the index always equals a full look at the tree."""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import random

import pytest

from stockade.history import HistoryConfig, Tracker
from stockade.history._inotify import DIRECTORY_MASK, TRUSTED_FILESYSTEMS, Inotify, filesystem_type

from .support import Session, write


@pytest.fixture
def method() -> str:
    return "watch"


@pytest.fixture
def outside(tmp_path) -> str:
    path = tmp_path / "outside"
    path.mkdir()
    return str(path)


def _full_look(root: str, store) -> dict:
    scanner = Tracker.open(root, store, HistoryConfig(watch=False))
    try:
        return {p: k.entry for p, k in scanner.index.entries.items()}
    finally:
        scanner.close()


def _call(tracker: Tracker, action) -> object:
    started = tracker.before()
    action()
    return tracker.after(started.mark)


def test_the_root_here_is_on_a_filesystem_whose_events_are_trusted(root):
    fd = os.open(root, os.O_RDONLY)
    try:
        assert filesystem_type(fd) in TRUSTED_FILESYSTEMS
    finally:
        os.close(fd)


def test_a_moved_directory_and_what_changed_inside_it_after(root, open_tracker):
    write(f"{root}/a/b/c/file", "1")
    write(f"{root}/a/keep", "k")
    tracker = open_tracker()

    def act() -> None:
        os.rename(f"{root}/a/b", f"{root}/moved")
        write(f"{root}/moved/c/file", "2")  # through the watch made for the old path
        write(f"{root}/moved/c/new", "n")
        os.mkdir(f"{root}/moved/c/d")
        write(f"{root}/moved/c/d/deeper", "x")

    change = _call(tracker, act)
    assert change.deleted == ["a/b", "a/b/c", "a/b/c/file"]
    assert change.created == [
        "moved",
        "moved/c",
        "moved/c/d",
        "moved/c/d/deeper",
        "moved/c/file",
        "moved/c/new",
    ]
    # A write in the next call through the moved directory's (reused) watch is heard.
    change = _call(tracker, lambda: write(f"{root}/moved/c/file", "3"))
    assert change.modified == ["moved/c/file"]
    assert {p: k.entry for p, k in tracker.index.entries.items()} == _full_look(root, tracker.store)


def test_a_directory_moved_out_and_back_in(root, outside, open_tracker):
    write(f"{root}/d/f", "1")
    tracker = open_tracker()
    change = _call(tracker, lambda: os.rename(f"{root}/d", f"{outside}/d"))
    assert change.deleted == ["d", "d/f"]
    write(f"{outside}/d/f", "changed while outside")  # no longer the root's business

    def back() -> None:
        os.rename(f"{outside}/d", f"{root}/d")
        write(f"{root}/d/g", "2")

    change = _call(tracker, back)
    assert change.created == ["d", "d/f", "d/g"]


def test_a_hard_link_made_from_outside_and_written_through(root, outside, open_tracker):
    write(f"{root}/a.txt", "original")
    tracker = open_tracker()
    # The control: a directory's watch hears neither the link nor the write through it.
    control = Inotify()
    try:
        control.add(os.fsencode(root), DIRECTORY_MASK)
        os.link(f"{root}/a.txt", f"{outside}/x")
        write(f"{outside}/x", "through the other name")
        assert [e for e in control.read() if e[3] == b"a.txt"] == []
    finally:
        control.close()
    # The tracker's own watch on the file heard the link, and read the file again.
    started = tracker.before()
    assert started.outside.modified == ["a.txt"]
    tracker.after(started.mark)
    # From now on the file is watched for writes through any name.
    change = _call(tracker, lambda: write(f"{outside}/x", "again"))
    assert change.modified == ["a.txt"]


def test_a_hard_link_made_during_a_call_then_written_through(root, outside, open_tracker):
    write(f"{root}/a.txt", "original")
    tracker = open_tracker()

    def act() -> None:
        os.link(f"{root}/a.txt", f"{outside}/x")
        write(f"{outside}/x", "through the other name")

    assert _call(tracker, act).modified == ["a.txt"]
    assert _call(tracker, lambda: write(f"{outside}/x", "later")).modified == ["a.txt"]


def test_a_hard_link_that_existed_before_watching(root, outside, open_tracker):
    write(f"{root}/a.txt", "original")
    os.link(f"{root}/a.txt", f"{outside}/x")
    tracker = open_tracker()
    assert _call(tracker, lambda: write(f"{outside}/x", "written outside")).modified == ["a.txt"]


def test_two_names_in_the_root_for_one_file(root, open_tracker):
    write(f"{root}/one", "same")
    os.link(f"{root}/one", f"{root}/two")
    tracker = open_tracker()
    assert _call(tracker, lambda: write(f"{root}/one", "both change")).modified == ["one", "two"]


def test_a_write_through_a_descriptor_opened_before_the_call(root, open_tracker):
    write(f"{root}/log.txt", "start\n")
    tracker = open_tracker()
    handle = open(f"{root}/log.txt", "a")  # noqa: SIM115
    try:
        change = _call(tracker, lambda: (handle.write("from an old fd\n"), handle.flush()))
        assert change.modified == ["log.txt"]
        # Even after the file was renamed: the fd's writes land where it is now.
        os.rename(f"{root}/log.txt", f"{root}/renamed.txt")
        tracker.after(tracker.before().mark)
        change = _call(tracker, lambda: (handle.write("again\n"), handle.flush()))
        assert change.modified == ["renamed.txt"]
    finally:
        handle.close()


def test_a_write_through_a_shared_mapping_made_before_the_call(root, open_tracker):
    write(f"{root}/mapped.bin", b"\0" * 4096)
    tracker = open_tracker()
    fd = os.open(f"{root}/mapped.bin", os.O_RDWR)
    mapping = mmap.mmap(fd, 4096)

    def act() -> None:
        mapping[:5] = b"hello"
        mapping.close()
        os.close(fd)  # the last reference: the kernel says IN_CLOSE_WRITE

    assert _call(tracker, act).modified == ["mapped.bin"]


def test_more_events_than_the_kernel_queues_falls_back_to_a_full_look(root, open_tracker):
    with open("/proc/sys/fs/inotify/max_queued_events") as limit:
        queued = int(limit.read())
    count = queued // 3 + 500  # a create, a write and a close each
    write(f"{root}/keep", "k")
    tracker = open_tracker()

    def act() -> None:
        for i in range(count):  # in a watched directory: each one is three events
            write(f"{root}/{i}.txt", str(i))

    change = _call(tracker, act)
    assert change.rescanned and "overflowed" in change.rescanned
    assert len([p for p in change.created if p.endswith(".txt")]) == count
    # Watching goes on after the full look.
    assert _call(tracker, lambda: write(f"{root}/keep", "again")).modified == ["keep"]


def test_running_out_of_watches_falls_back_to_scanning(root, store, monkeypatch):
    for i in range(20):
        write(f"{root}/d{i}/f", str(i))
    added = 0
    real_add = Inotify.add

    def limited(self, path: bytes, mask: int) -> int:
        nonlocal added
        added += 1
        if added > 15:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_add(self, path, mask)

    monkeypatch.setattr(Inotify, "add", limited)
    tracker = Tracker.open(root, store)
    try:
        assert tracker.method == "scan" and "watch limit" in (tracker.why_scanning or "")
        change = _call(tracker, lambda: write(f"{root}/d3/f", "changed"))
        assert change.modified == ["d3/f"] and change.method == "scan"
    finally:
        tracker.close()


def test_no_inotify_instance_falls_back_to_scanning(root, store, monkeypatch):
    def refused(self) -> None:
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(Inotify, "__init__", refused)
    tracker = Tracker.open(root, store)
    try:
        assert tracker.method == "scan" and "no inotify instance" in (tracker.why_scanning or "")
        assert _call(tracker, lambda: write(f"{root}/f", "1")).created == ["f"]
    finally:
        tracker.close()


def test_changes_between_calls_are_an_outside_change(root, open_tracker):
    write(f"{root}/f", "1")
    tracker = open_tracker()
    _call(tracker, lambda: None)
    write(f"{root}/f", "edited by a person")
    started = tracker.before()
    assert started.outside.modified == ["f"]
    assert tracker.after(started.mark).items == {}


def test_a_window_opened_while_another_is_open_is_concurrent(root, open_tracker):
    tracker = open_tracker()
    first = tracker.before()
    second = tracker.before()
    write(f"{root}/f", "1")
    one = tracker.after(first.mark)
    two = tracker.after(second.mark)
    assert one.created == two.created == ["f"]
    assert one.concurrent and two.concurrent


def test_random_work_always_matches_a_full_look(root, outside, store, open_tracker):
    """Many windows of random operations; after each, the watched index equals what a
    full scan of the tree finds, and the window's change is exactly the difference."""
    rng = random.Random(42)
    tracker = open_tracker()
    names = [f"n{i}" for i in range(6)]

    def some_dir() -> str:
        dirs = [d for d, _, _ in os.walk(root)]
        return rng.choice(dirs)

    def operation() -> None:
        where = some_dir()
        target = os.path.join(where, rng.choice(names))
        kind = rng.randrange(9)
        try:
            if kind <= 2:
                write(target, os.urandom(rng.randrange(1, 64)))
            elif kind == 3:
                os.makedirs(target, exist_ok=True)
            elif kind == 4 and os.path.lexists(target):
                if os.path.isdir(target) and not os.path.islink(target):
                    os.rename(target, os.path.join(some_dir(), rng.choice(names) + "r"))
                else:
                    os.unlink(target)
            elif kind == 5 and os.path.isfile(target):
                os.chmod(target, rng.choice([0o600, 0o644, 0o755]))
            elif kind == 6 and not os.path.lexists(target):
                os.symlink(rng.choice(["../x", "/etc", "n1"]), target)
            elif kind == 7 and os.path.isfile(target) and not os.path.islink(target):
                other = os.path.join(outside, f"link{rng.randrange(1000)}")
                if not os.path.exists(other):
                    os.link(target, other)
                with open(other, "ab") as handle:
                    handle.write(b"+")
            elif kind == 8 and os.path.isfile(target) and not os.path.islink(target):
                os.rename(target, os.path.join(where, rng.choice(names) + "m"))
        except OSError:
            pass  # a rename into its own subtree, a name taken: not the point here

    previous = _full_look(root, store)
    for _window in range(25):
        started = tracker.before()
        for _ in range(rng.randrange(1, 30)):
            operation()
        change = tracker.after(started.mark)
        now = _full_look(root, store)
        assert {p: k.entry for p, k in tracker.index.entries.items()} == now
        expected = {
            p: (previous.get(p), now.get(p))
            for p in set(previous) | set(now)
            if previous.get(p) != now.get(p)
        }
        assert dict(change.items) == expected
        previous = now


def test_a_session_undoes_random_work_back_to_the_start(root, outside, open_tracker):
    rng = random.Random(7)
    for i in range(30):
        write(f"{root}/d{i % 4}/f{i}", f"{i}")
    from .support import tree_hash

    start = tree_hash(root)
    session = Session(open_tracker())
    calls = []
    for _ in range(10):

        def act() -> None:
            for _ in range(10):
                d = f"{root}/d{rng.randrange(5)}"
                f = f"{d}/f{rng.randrange(40)}"
                choice = rng.randrange(4)
                if choice == 0:
                    write(f, os.urandom(8))
                elif choice == 1 and os.path.exists(f):
                    os.unlink(f)
                elif choice == 2 and os.path.exists(f):
                    os.chmod(f, 0o600)
                elif choice == 3 and os.path.isdir(d):
                    with contextlib.suppress(OSError):  # the name: a non-empty directory
                        os.rename(d, f"{root}/d{rng.randrange(5, 9)}")

        calls.append(session.call(act))
    for call in reversed(calls):
        plan, applied = session.undo(call)
        assert not plan.blocked, plan.conflicts
        assert applied is not None and not applied.left
    assert tree_hash(root) == start
