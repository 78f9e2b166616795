"""The paths budget (docs/undo.md, "What a command or a model can do to it"): a root with
more paths than `paths_budget` stops its history for good, freeing all it held, and no
look on the way lists more than the budget nor the index holds more: a command that
makes twenty times the budget costs the tracker a bounded look, not twenty times it."""

from __future__ import annotations

import os
from collections.abc import Iterator

import attrs
import pytest

from stockade.history import HistoryConfig, OverBudget, Tracker, fold_history
from stockade.history._index import Index
from stockade.history._watches import Nominations

from .support import Session, write

BUDGET = 40


@attrs.define
class Looked:
    """What the walk read from the kernel: directory entries listed, entries stat'ed."""

    listed: int = 0
    stated: int = 0


class _CountingListing:
    """os.scandir's iterator, counting each entry as it is read."""

    def __init__(self, inner: os.ScandirIterator, looked: Looked) -> None:  # type: ignore[type-arg]
        self._inner = inner
        self._looked = looked

    def __enter__(self) -> _CountingListing:
        return self

    def __exit__(self, *exc: object) -> None:
        self._inner.close()

    def __iter__(self) -> Iterator[os.DirEntry[str]]:
        for item in self._inner:
            self._looked.listed += 1
            yield item

    def close(self) -> None:
        self._inner.close()


@pytest.fixture
def looked(monkeypatch) -> Looked:
    """Counts every entry any scandir yields, and every stat by a directory's descriptor
    (the walk's per-entry look), from here on."""
    counts = Looked()
    scandir, stat = os.scandir, os.stat

    def counting_scandir(path=".", *args, **kwargs):
        return _CountingListing(scandir(path, *args, **kwargs), counts)

    def counting_stat(path, *args, **kwargs):
        if kwargs.get("dir_fd") is not None:
            counts.stated += 1
        return stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "scandir", counting_scandir)
    monkeypatch.setattr(os, "stat", counting_stat)
    return counts


@pytest.fixture
def largest_index(monkeypatch) -> Looked:
    """The most paths any index held at once (`listed` here), from here on."""
    largest = Looked()
    setter = Index.set

    def counting_set(self: Index, path, known) -> None:
        setter(self, path, known)
        largest.listed = max(largest.listed, len(self))

    monkeypatch.setattr(Index, "set", counting_set)
    return largest


def _make(root: str, count: int, directory: str = "many", first: int = 0) -> None:
    os.makedirs(f"{root}/{directory}", exist_ok=True)
    for i in range(first, first + count):
        with open(f"{root}/{directory}/f{i}", "wb"):
            pass


def _descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_the_budget_is_positive_and_its_default_is_documented():
    assert HistoryConfig().paths_budget == 200_000
    with pytest.raises(ValueError, match="paths_budget must be 1 or more"):
        HistoryConfig(paths_budget=0)


def test_a_root_over_the_budget_never_opens_and_the_look_stops_at_it(root, store, method, looked):
    # Twenty times the budget, in one directory and spread over nested ones.
    _make(root, 10 * BUDGET)
    for part in range(10):
        _make(root, BUDGET, f"nested/{part}/deeper")
    looked.listed = looked.stated = 0
    descriptors = _descriptors()
    config = HistoryConfig(watch=method == "watch", paths_budget=BUDGET)
    with pytest.raises(OverBudget) as over:
        Tracker.open(root, store, config)
    assert (
        str(over.value) == f"{os.path.realpath(root)} holds more than {BUDGET} paths (paths_budget)"
    )
    # It stopped at the first entry past the budget: 20x the budget on disk, the budget
    # read (each stat'ed once, and once again after its watch is in place when watching).
    assert looked.listed == BUDGET + 1
    assert looked.stated <= 2 * BUDGET
    assert _descriptors() == descriptors  # the root, the kept directories, inotify: all closed
    assert store.known(HistoryConfig().identity()) == {}  # nothing of the look was kept


def test_a_root_at_the_budget_opens(root, open_tracker):
    _make(root, BUDGET - 1)
    assert len(open_tracker(paths_budget=BUDGET).index) == BUDGET


def test_a_call_past_the_budget_stops_the_history_and_frees_everything(
    root, store, open_tracker, looked, largest_index
):
    write(f"{root}/kept.txt", "kept\n")
    tracker = open_tracker(paths_budget=BUDGET)
    session = Session(tracker)
    first = session.call(lambda: write(f"{root}/a.txt", "a\n"))
    descriptors = _descriptors()
    held = 1 + (tracker.watcher is not None)  # the root's descriptor, the inotify instance

    started = tracker.before()
    known = store.known(tracker.config.identity())
    looked.listed = 0
    _make(root, 20 * BUDGET)
    with pytest.raises(OverBudget, match=f"more than {BUDGET} paths"):
        tracker.after(started.mark)

    # Bounded: the nominated directory's look stopped at the budget, then one full look
    # did (by events), or the one full look of a scanning tracker.
    assert looked.listed <= 2 * (BUDGET + 1)
    assert largest_index.listed <= BUDGET
    # Everything it held is freed: index, watches (the inotify descriptor), the root's.
    assert tracker.stopped and len(tracker.index) == 0
    assert tracker.watcher is None and tracker.fileno() is None and tracker.root_fd == -1
    assert _descriptors() == descriptors - held
    # Nothing in the store was deleted, and nothing of the failed boundary committed.
    assert store.known(tracker.config.identity()) == known
    (record,) = tracker.records(fold_history(session.events))
    assert record.call == first and set(record.changes) == {"a.txt"}

    # Every later window is refused at once, without a look.
    looked.listed = looked.stated = 0
    with pytest.raises(OverBudget):
        tracker.before()
    with pytest.raises(OverBudget):
        tracker.read(["a.txt"])
    assert (looked.listed, looked.stated) == (0, 0)
    tracker.drain()  # nothing to read, nothing to fail


def test_growth_by_single_files_never_holds_more_than_the_budget(root, open_tracker, largest_index):
    # Few enough events to be looked at one by one (watching): the index would hold 43,
    # so it is refused before it does, and the full look that decides lists 43.
    _make(root, BUDGET - 10)
    tracker = open_tracker(paths_budget=BUDGET)
    started = tracker.before()
    _make(root, 12, first=BUDGET - 10)
    with pytest.raises(OverBudget):
        tracker.after(started.mark)
    assert largest_index.listed <= BUDGET


def test_a_directory_moved_within_a_root_near_the_budget_is_not_counted_twice(root, open_tracker):
    # 27 paths in "m" of 34: walked at its new place before the old one is forgotten,
    # the index would seem to hold 61; one full look finds 34 and records the move.
    _make(root, 26, "m")
    _make(root, 6, "other")
    tracker = open_tracker(paths_budget=BUDGET)
    started = tracker.before()
    os.rename(f"{root}/m", f"{root}/a")
    change = tracker.after(started.mark)
    assert not tracker.stopped
    assert len(change.created) == len(change.deleted) == 27
    assert len(tracker.index) == 34


@pytest.mark.parametrize("method", ["watch"])
def test_many_events_never_make_more_nominations_than_the_budget(root, open_tracker):
    _make(root, 1)
    tracker = open_tracker(paths_budget=BUDGET)
    started = tracker.before()
    for batch in range(5):
        _make(root, (batch + 1) * 4 * BUDGET)
        tracker.drain()
        assert tracker.watcher is not None
        pending = tracker.watcher.pending
        assert pending.crowded and not pending.paths and not pending.subtrees
    with pytest.raises(OverBudget):
        tracker.after(started.mark)


def test_nominations_past_their_limit_ask_for_one_full_look():
    nominations = Nominations()
    nominations.merge(Nominations(paths={"a", "b"}, subtrees={"c"}), limit=3)
    assert not nominations.crowded and nominations.paths == {"a", "b"}
    nominations.merge(Nominations(paths={"d"}), limit=3)
    assert nominations.crowded and nominations.whole
    assert not nominations.paths and not nominations.subtrees
    nominations.merge(Nominations(paths={"e"}), limit=3)  # nothing is kept once crowded
    assert not nominations.paths and bool(nominations)
