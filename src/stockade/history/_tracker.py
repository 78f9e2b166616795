"""One root followed between calls: its index, its watches (or full scans where watching
is not sound), the windows of the calls in flight, and what each call changed.

`before()` opens a call's window and hands back what changed since the last window
closed (made outside any call); `after(mark)` closes it and returns the call's Change,
its manifest committed to the store. Nothing here blocks on anything but the disk.
Past its paths budget a root's history stops for good (`OverBudget`).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence

import attrs

from ..errors import StockadeError
from ..reprs import fields_repr
from ._apply import Applied, apply_plan
from ._ignore import GITIGNORE, IgnoreRules, TooManyRules
from ._index import Index, Known
from ._inotify import TRUSTED_FILESYSTEMS, Inotify, filesystem_type, unsupported_reason
from ._model import (
    Change,
    Entry,
    Pair,
    depth,
    differences,
    is_under,
    parent_of,
    tree_order,
)
from ._plan import Plan, Record, plan_restore, plan_undo, restore_scope, undo_scope
from ._store import SnapshotStore
from ._walk import Beneath, Found, Looker, Reading, TooManyPaths, Watcher, WatchingStopped
from ._watches import Nominations
from .config import FIRST_LOOK_FACTOR, HistoryConfig
from .events import RecordRef

OVERFLOW = "the kernel's event queue overflowed"
ROOT_MOVED = "the root itself was moved or deleted"
RULES_CHANGED = "ignore rules changed"
CROWDED = "more paths changed than the paths budget"


class HistoryError(StockadeError):
    """The history of a root cannot be kept as asked (the message says why)."""


class OverBudget(HistoryError):
    """The root passed a budget of its history: more paths than `paths_budget` (`kind`
    "paths"), or ignore rules past `rules_budget` ("rules"; `why` says which). Its
    history stopped (the tracker freed its index, watches and descriptors, and refuses
    every window; the store keeps what it had committed)."""

    def __init__(self, root: str, why: str, kind: str) -> None:
        self.root = root
        self.why = why
        self.kind = kind
        super().__init__(f"{root} {why}")


def _paths_over(budget: int) -> str:
    return f"holds more than {budget:,} paths (paths_budget)"


@attrs.define(eq=False)
class Mark:
    """An open window: every path changed in it, with its state when the window opened."""

    __repr__ = fields_repr

    number: int
    before: dict[str, Entry | None] = attrs.field(factory=dict)
    concurrent: bool = False
    rescans: set[str] = attrs.field(factory=set)
    # Paths left out by ignore rules added in this window whose state it changed: the
    # index holds them no more, so they are read again as it closes, and the change is
    # recorded, not hidden.
    left_out: set[str] = attrs.field(factory=set)


@attrs.frozen
class Started:
    """What `before()` returns: the call's open window, and what changed since the last
    window closed (outside any call; empty when nothing did)."""

    __repr__ = fields_repr

    mark: Mark
    outside: Change


def _store_inside(store_dir: str, root: str) -> bool:
    return store_dir == root or is_under(store_dir.lstrip("/"), root.lstrip("/"))


class Tracker:
    """The history-keeping side of one root, shared by every session working in it.

    Thread-safe (one lock): a harness may call it from worker threads. Open it once per
    root, outside any call; `close()` frees its watches and descriptors. A root with more
    paths than `config.paths_budget` stops its history for good (`OverBudget`, from
    `open` or from the window that found it): everything is freed then, and every later
    window is refused without a look.
    """

    def __init__(
        self,
        root: str,
        root_fd: int,
        store: SnapshotStore,
        config: HistoryConfig,
        watcher: Watcher | None,
        why_scanning: str | None,
    ) -> None:
        self.root = root
        self.root_fd = root_fd
        self.store = store
        self.config = config
        self.watcher = watcher
        self.why_scanning = why_scanning
        self.index = Index()
        self.rules = self._no_rules()
        self._lock = threading.RLock()
        self._numbers = itertools.count(1)
        self._calls: dict[int, Mark] = {}
        self._outside = Mark(0)
        self._identity = config.identity()
        self.stopped: OverBudget | None = None
        # Within one boundary: whether a full look was made (it covers everything), and
        # how many names the looks at parts of the root may still list before one full
        # look (bounded by the budget) is the cheaper way to catch up.
        self._whole = False
        self._partial_left = config.paths_budget
        # What this boundary may still read (bytes_budget; reset at each boundary).
        self._reading = Reading(config.bytes_budget)
        # What looked like the sandbox's placeholders (left out of the index), each
        # looked at again at every boundary: a command can imitate one, then write in it.
        self._unseen: set[str] = set()

    # --- opening ---------------------------------------------------------------------------

    @classmethod
    def open(cls, root: str, store: SnapshotStore, config: HistoryConfig | None = None) -> Tracker:
        """Look at the whole root once (storing what the store lacks), start watching it,
        and compare it with what the store last knew of it: what changed while nothing
        watched is the first `before()`'s outside change."""
        config = config or HistoryConfig()
        root = os.path.realpath(root)
        if _store_inside(store.directory, root):
            raise HistoryError(
                f"the snapshot store {store.directory} lies inside the root {root}: a "
                "command could read and rewrite its own history; put it outside"
            )
        root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        watcher, why = None, unsupported_reason() if config.watch else "watching is off"
        if why is None:
            kind = filesystem_type(root_fd)
            if kind not in TRUSTED_FILESYSTEMS:
                why = f"the root is on a filesystem (type {kind:#x}) inotify may not hear"
            else:
                try:
                    watcher = Watcher(Inotify(), config.paths_budget)
                except OSError as error:  # fs.inotify.max_user_instances reached
                    why = f"no inotify instance could be made: {error.strerror}"
        tracker = cls(root, root_fd, store, config, watcher, why)
        try:
            tracker._first_look()
        except (TooManyPaths, TooManyRules) as past:
            tracker.close()  # it keeps nothing; the store keeps what its first look committed
            raise tracker._over(past) from None
        except BaseException:
            tracker.close()
            raise
        return tracker

    def _looker(self, prior: Mapping[str, Known], limit: int | None = None) -> Looker:
        return Looker(
            Beneath(self.root_fd),
            self.rules,
            self.store,
            self.config.file_budget,
            prior.get,
            self._reading,
            self.watcher,
            os.fstat(self.root_fd).st_dev,
            limit=limit,
            unseen=self._unseen,
        )

    def _walk(self, top: str, prior: Mapping[str, Known]) -> Found:
        """Every path in `top` now; a full look lists at most the budget, a look at a part
        at most what this boundary has left for such looks (TooManyPaths past it)."""
        limit = self._partial_left if top else self.config.paths_budget
        looker = self._looker(prior, limit)
        try:
            found = looker.subtree(top)
        finally:
            looker.beneath.forget()
            if top:
                self._partial_left -= looker.listed
        self.rules = looker.rules
        return found

    def _look_everywhere(self, prior: Mapping[str, Known]) -> Found:
        try:
            return self._walk("", prior)
        except WatchingStopped as stopped:
            self._stop_watching(str(stopped))
            return self._walk("", prior)

    def _first_look(self) -> None:
        known = self.store.known(self._identity)
        self._reading = Reading.of(self.config.bytes_budget * FIRST_LOOK_FACTOR, self.store)
        with self.store.batch():
            found = self._look_everywhere(known)
            for path in sorted(found.entries, key=lambda p: p.count("/")):
                self.index.set(path, found.entries[path])
            updates: dict[str, Known | None] = {
                p: k for p, k in found.entries.items() if known.get(p) != k
            }
            updates.update({p: None for p in known if p not in found.entries})
            self.store.remember(self._identity, updates, whole=not known)
        if known:  # what changed while nothing watched: the first window's outside change
            old_rules = self._rules_of(known)
            left_out: dict[str, bool] = {}
            dropped = [p for p in known if p not in found.entries and _inside_any(p, found.ignored)]
            last = self._left_out_changes(dropped, {p: known[p] for p in dropped})
            self._outside.left_out.update(last)
            for path in set(known) | set(found.entries):
                old = known[path].entry if path in known else None
                new = self.index.entry(path)
                if old == new:
                    continue
                if new is None and _inside_any(path, found.ignored) and path not in last:
                    continue  # left out since (an ignore rule added), unchanged: not deleted
                if old is None and _ignored_by(
                    old_rules, path, new is not None and new.kind == "dir", left_out
                ):
                    continue  # recorded since (an ignore rule dropped): its past is unknown
                self._outside.before[path] = old

    def _rules_of(self, known: Mapping[str, Known]) -> IgnoreRules:
        """The ignore rules the store's last record of the root was made under."""
        rules = self._no_rules()
        for path, item in known.items():
            if path.rpartition("/")[2] == GITIGNORE and item.entry.digest is not None:
                rules = rules.with_file(parent_of(path), [self.store.get(item.entry.digest)])
        return rules

    def _stop_watching(self, why: str) -> None:
        if self.watcher is not None:
            self.watcher.close()
        self.watcher = None
        self.why_scanning = why

    # --- past the budget ---------------------------------------------------------------------

    def _no_rules(self) -> IgnoreRules:
        return IgnoreRules(
            self.config.record_ignored, self.config.record_git, budget=self.config.rules_budget
        )

    def _over(self, past: TooManyPaths | TooManyRules) -> OverBudget:
        if isinstance(past, TooManyRules):
            return OverBudget(self.root, past.why, "rules")
        return OverBudget(self.root, _paths_over(self.config.paths_budget), "paths")

    @contextlib.contextmanager
    def _within_budget(self) -> Iterator[None]:
        """A look or an update that passed the paths or the rules budget stops this root's
        history (outside the store's batch, which has rolled back what the boundary
        wrote)."""
        try:
            yield
        except (TooManyPaths, TooManyRules) as past:
            over = self._over(past)
            self._stop(over)
            raise over from None

    def _refuse_if_stopped(self) -> None:
        if self.stopped is not None:
            raise OverBudget(self.stopped.root, self.stopped.why, self.stopped.kind)

    def _stop(self, over: OverBudget) -> None:
        """Free everything this root's history holds, for good: every later window is
        refused at once, without a look."""
        self.stopped = over
        self._stop_watching(f"the history stopped: the root {over.why}")
        self.index = Index()
        self.rules = self._no_rules()
        self._unseen = set()
        self._calls.clear()
        self._outside = Mark(0)
        if self.root_fd >= 0:
            os.close(self.root_fd)
            self.root_fd = -1

    # --- the calls' windows ------------------------------------------------------------------

    @property
    def method(self) -> str:
        return "watch" if self.watcher is not None else "scan"

    def fileno(self) -> int | None:
        """The inotify descriptor (readable when events wait): a harness may `drain()`
        whenever it is, so a long call cannot overflow the kernel's queue."""
        return self.watcher.inotify.fileno() if self.watcher is not None else None

    def drain(self) -> None:
        """Read the events waiting now (no look at the tree: that waits for a boundary)."""
        with self._lock:
            if self.watcher is not None:
                self.watcher.drain()

    def before(self) -> Started:
        """Open a call's window. Changes since the last window closed are returned as the
        outside change when no other call is in flight (else they belong to that call).
        OverBudget: the root's history stopped (now, or before)."""
        with self._lock:
            self._refuse_if_stopped()
            # One commit: the catch-up and the manifest.
            with self._within_budget(), self.store.batch():
                self._catch_up()
                outside = Change()
                if not self._calls:
                    outside = self._close(self._outside)
                    self._outside = Mark(0)
            mark = Mark(next(self._numbers), concurrent=bool(self._calls))
            for other in self._calls.values():
                other.concurrent = True
            self._calls[mark.number] = mark
            return Started(mark, outside)

    def after(self, mark: Mark) -> Change:
        """Close `mark`'s window: what changed in it, its manifest in the store.
        OverBudget: the root's history stopped (now, or while the window was open)."""
        with self._lock:
            self._refuse_if_stopped()
            if self._calls.get(mark.number) is not mark:
                raise HistoryError(f"window {mark.number} is not open")
            # One commit: the catch-up and the manifest.
            with self._within_budget(), self.store.batch():
                self._catch_up()
                del self._calls[mark.number]
                change = self._close(mark)
            if not self._calls:
                self._outside = Mark(0)
            return change

    def _close(self, mark: Mark) -> Change:
        now = {p: self.index.entry(p) for p in mark.before}
        if mark.left_out:
            # Left out of the index, so unheard since: their state as the window ends.
            now.update(self._states_now(mark.left_out, {}))
        items = differences(mark.before, now)
        manifest = None
        if items:
            manifest = self.store.put_change(items)
        rescanned = "; ".join(sorted(mark.rescans)) or None
        if self.watcher is None:
            rescanned = self.why_scanning  # every window was a full comparison
        return Change(items, self.method, rescanned, mark.concurrent, manifest)

    def _windows(self) -> list[Mark]:
        return list(self._calls.values()) or [self._outside]

    # --- catching up with the tree -----------------------------------------------------------

    def _catch_up(self) -> None:
        """Bring the index up to the tree: the nominated paths (or every path). When the
        looks at parts of the root would list more than the budget between them, or the
        index would pass it, one full look decides instead (TooManyPaths if it passes
        the budget too: the history stops)."""
        self._whole = False
        self._partial_left = self.config.paths_budget
        unseen, self._unseen = self._unseen, set()
        try:
            self._catch_up_with(unseen)
        except BaseException:
            self._unseen |= unseen  # looked at again next time, not forgotten
            raise

    def _catch_up_with(self, unseen: set[str]) -> None:
        if self.watcher is None:
            self._reading = Reading.of(self.config.bytes_budget, self.store)
            with self.store.batch():
                self._rescan("", None)
            return
        nominations = self.watcher.take()
        if not nominations and not unseen:
            return
        self._reading = Reading.of(self.config.bytes_budget, self.store)
        with self.store.batch():
            if nominations.whole:
                self._rescan("", _why_whole(nominations))
                return
            try:
                self._look_at_nominated(nominations)
                if unseen and not self._whole:
                    # Still a placeholder: named again. Anything else is recorded now,
                    # with what it holds, as this window's.
                    self._look_at(unseen - self._unseen)
            except TooManyPaths:  # not TooManyRules: a full look would meet the rules again
                if self._whole:
                    raise  # a full look passed the budget
                self._rescan("", CROWDED)

    def _look_at_nominated(self, nominations: Nominations) -> None:
        subtrees = nominations.outermost_subtrees()
        for top in subtrees:
            if self._whole:
                return  # a full look was made meanwhile (watching stopped): it covered all
            self._rescan(top, None)
        if self._whole:
            return
        single = [p for p in nominations.paths if not any(_within(p, top) for top in subtrees)]
        self._look_at(single)

    def _look_at(self, paths: Iterable[str]) -> None:
        looker = self._looker(self.index.entries)
        updates: dict[str, Known | None] = {}
        walk_again: list[str] = []
        try:
            for path in sorted(paths, key=lambda p: p.count("/")):
                tracked = self._tracked_directory(parent_of(path))
                known = looker.path(path) if tracked else None
                old = self.index.get(path)
                if known is not None and known.entry.kind == "dir":
                    if old is None or old.entry.kind != "dir" or old.entry != known.entry:
                        walk_again.append(path)  # a new directory, or one just made readable
                    elif old != known:
                        updates[path] = known
                    continue
                if old is not None and old.entry.kind == "dir":
                    updates.update({inner: None for inner in self.index.below(path)})
                if known is None:
                    if old is not None:
                        updates[path] = None
                elif old != known:
                    updates[path] = known
        except WatchingStopped as stopped:
            looker.beneath.forget()
            self._stop_watching(str(stopped))
            self._rescan("", str(stopped))
            return
        except BaseException:
            looker.beneath.forget()  # past a budget: its directories' descriptors too
            raise
        looker.beneath.forget()
        self._update(updates, set())
        for top in walk_again:
            if self._whole:
                return
            self._rescan(top, None)

    def _rescan(self, top: str, reason: str | None) -> None:
        """Look at all of `top` again and record how it differs from the index."""
        old_rules = self.rules
        if top and not self._tracked_directory(parent_of(top)):
            found = Found()
        else:
            self._whole = self._whole or not top
            try:
                found = self._walk(top, self.index.entries)
            except WatchingStopped as stopped:
                self._stop_watching(str(stopped))
                self._rescan("", str(stopped))
                return
        if reason is not None:
            for window in self._windows():
                window.rescans.add(reason)
        before = (
            [top, *self.index.below(top)]
            if top in self.index.entries
            else list(self.index.below(top))
        )
        updates: dict[str, Known | None] = {}
        silent: set[str] = set()
        left_out: dict[str, bool] = {}  # directories the old rules left out, by path
        for path in before:
            if path not in found.entries:
                updates[path] = None
                if _inside_any(path, found.ignored):
                    silent.add(path)  # left out from now on, not deleted
        # A path left out from now on that this window changed (an ignore rule added in
        # the same call as the edit) is recorded as changed to its state now, never
        # dropped unseen: a command could otherwise rewrite a file past undo.
        last = self._left_out_changes(silent, self.index.entries)
        silent -= last.keys()
        for path, known in found.entries.items():
            old = self.index.get(path)
            if old is None:
                updates[path] = known
                if old_rules is not self.rules and _ignored_by(
                    old_rules, path, known.entry.kind == "dir", left_out
                ):
                    silent.add(path)  # recorded from now on; its past is unknown
            elif old != known:
                updates[path] = known
        self._update(updates, silent, walked=top, left_out=last)

    def _left_out_changes(
        self, paths: Iterable[str], prior: Mapping[str, Known]
    ) -> dict[str, Entry | None]:
        """Of `paths` (each recorded, now left out by ignore rules), those whose state
        differs from `prior`'s, with their state now (None: gone)."""
        now = self._states_now(paths, prior)
        return {path: entry for path, entry in now.items() if entry != prior[path].entry}

    def _states_now(
        self, paths: Iterable[str], prior: Mapping[str, Known]
    ) -> dict[str, Entry | None]:
        """Each path's state now (None: gone) whatever the ignore rules say, read under
        this boundary's byte budget (contents stored; `prior` saves a read)."""
        looker = Looker(
            Beneath(self.root_fd),
            IgnoreRules(record_ignored=True, record_git=True),
            self.store,
            self.config.file_budget,
            prior.get,
            self._reading,
        )
        states: dict[str, Entry | None] = {}
        try:
            for path in sorted(paths, key=tree_order):
                known = looker.path(path)
                states[path] = known.entry if known is not None else None
        finally:
            looker.beneath.forget()
        return states

    def _tracked_directory(self, path: str) -> bool:
        if not path:
            return True
        entry = self.index.entry(path)
        return entry is not None and entry.kind == "dir"

    def _update(
        self,
        updates: Mapping[str, Known | None],
        silent: set[str],
        walked: str | None = None,
        left_out: Mapping[str, Entry | None] | None = None,
    ) -> None:
        """Apply new states to the index, the open windows, the watches and the store
        (TooManyPaths, and nothing applied, when the index would pass the budget).
        `walked`: the subtree these come from, looked at whole under the current rules;
        `left_out`: paths the index forgets (ignored from now on) whose windows record
        the state given here instead."""
        left_out = left_out or {}
        if not updates:
            return
        held = self.index.entries
        grows = sum(1 for p, k in updates.items() if k is not None and p not in held)
        shrinks = sum(1 for p, k in updates.items() if k is None and p in held)
        if len(self.index) + grows - shrinks > self.config.paths_budget:
            raise TooManyPaths
        olds = {path: self.index.entry(path) for path in updates}
        windows = self._windows()
        rules_dirs: set[str] = set()
        for path in sorted(updates, key=lambda p: p.count("/")):
            known = updates[path]
            if known is None:
                self.index.remove(path)
                if self.watcher is not None:
                    self.watcher.forget(path)
            else:
                self.index.set(path, known)
            new = known.entry if known is not None else None
            for window in windows:
                if path in left_out or (
                    # Changed earlier in this window, left out unchanged since.
                    known is None and path in silent and path in window.before
                ):
                    window.left_out.add(path)
                else:
                    window.left_out.discard(path)  # held by the index again
            if path not in silent and olds[path] != new:
                for window in windows:
                    window.before.setdefault(path, olds[path])
            if path.rpartition("/")[2] == GITIGNORE and olds[path] != new:
                rules_dirs.add(parent_of(path))
        self.store.remember(self._identity, updates, whole=False)
        if not self.config.record_ignored:
            for directory in sorted(rules_dirs):
                if self._tracked_directory(directory):
                    for window in windows:
                        window.rescans.add(RULES_CHANGED)
                    if walked is None or not _within(directory, walked):
                        # Inside `walked` the walk already read the new rules and left
                        # out or took in what they say, silently: again would be a waste.
                        self._rescan(directory, None)

    # --- reading, undoing, restoring -------------------------------------------------------

    def read(self, paths: Iterable[str]) -> dict[str, Entry | None]:
        """Each path's state on disk now, content hashed afresh (ignore rules aside): what
        an undo must find before it overwrites anything."""
        with self._lock:
            self._refuse_if_stopped()
            looker = Looker(
                Beneath(self.root_fd),
                IgnoreRules(record_ignored=True, record_git=True),
                None,
                self.config.file_budget,
                lambda _path: None,
            )
            try:
                out = {}
                for path in sorted(paths, key=tree_order):  # the directories above stay open
                    known = looker.path(path)
                    out[path] = known.entry if known is not None else None
                return out
            finally:
                looker.beneath.forget()

    def plan_undo(self, records: Sequence[Record], call: int) -> Plan:
        return plan_undo(records, call, self.read(undo_scope(records, call)))

    def plan_restore(self, records: Sequence[Record], before: int) -> Plan:
        return plan_restore(records, before, self.read(restore_scope(records, before)))

    def apply(self, plan: Plan) -> Applied:
        """Put `plan`'s states back (conflicts or not: the caller decided). Call it inside
        a window (`before()` ... `after()`), so what it changed is recorded like a call."""
        with self._lock:
            self._refuse_if_stopped()
            return apply_plan(self.root_fd, plan, self.store)

    def records(self, refs: Iterable[RecordRef]) -> list[Record]:
        """A session's records, from the references its log holds (`fold_history`)."""
        out = []
        for ref in refs:
            changes: dict[str, Pair] = self.store.change(ref.manifest) if ref.manifest else {}
            out.append(Record(ref.seq, ref.kind, ref.call, changes))
        return out

    def close(self) -> None:
        with self._lock:
            if self.watcher is not None:
                self.watcher.close()
                self.watcher = None
            if self.root_fd >= 0:
                os.close(self.root_fd)
                self.root_fd = -1


def _why_whole(nominations: Nominations) -> str:
    if nominations.overflow:
        return OVERFLOW
    return ROOT_MOVED if nominations.root_moved else CROWDED


def _within(path: str, top: str) -> bool:
    """`path` is `top` or inside it ("" is the root: everything is)."""
    return not top or path == top or is_under(path, top)


def _inside_any(path: str, directories: set[str]) -> bool:
    if path in directories:
        return True
    if len(directories) < depth(path):  # cheaper than a walk up a deep path
        return any(is_under(path, directory) for directory in directories)
    while path:
        path = parent_of(path)
        if path in directories:
            return True
    return False


def _ignored_by(rules: IgnoreRules, path: str, is_dir: bool, left_out: dict[str, bool]) -> bool:
    """True when `rules` left `path` out (it, or a directory above it); `left_out`
    remembers each directory's answer, so a deep tree costs its size, not its depth
    squared."""
    pending = []
    directory = parent_of(path)
    while directory and directory not in left_out:
        pending.append(directory)
        directory = parent_of(directory)
    verdict = left_out.get(directory, False) if directory else False
    for above in reversed(pending):
        verdict = verdict or rules.ignored(above, is_dir=True)
        left_out[above] = verdict
    return verdict or rules.ignored(path, is_dir)
