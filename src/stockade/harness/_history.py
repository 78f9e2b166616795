"""The harness's side of undo (issue 42): one Tracker per workspace root, opened before
the first call that may write there, the window around each such call, undo and restore.

A root past `paths_budget` or `rules_budget` stops its history for the harness's life: its
tracker is dropped, its calls run unrecorded, its undo is refused, and each session
working there is told once (`files/stopped`).

The store of a root lies beside the session logs (`<log dir>/history/<root id>/`, or the
state directory's `history/` for a store that is not a directory), which no confined
command may read or write. Everything that touches the disk runs in a worker thread.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import shutil
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import attrs
import trio

from ..errors import StockadeError
from ..events import SessionEvent
from ..history import (
    ChangeSummary,
    FilesChanged,
    FilesRestored,
    FilesUndone,
    HistoryConfig,
    HistoryStopped,
    UndoOutcome,
    fold_history,
)
from ..reprs import fields_repr

# The events and their fold only: the tracker, the store and the walk (sqlite3,
# pathspec, ctypes) load when a root's history is first opened.
from ..shown import one_line
from ..tools import JobStart, Recorded, ToolCalled
from ..vocab import ExecutionPolicy, SandboxMode

if TYPE_CHECKING:
    from ..history import Applied, Change, OverBudget, Plan, Record, Tracker
    from .session import Session

# The longest a summary of a call (its command's first line) is shown.
SUMMARY_LIMIT = 120
# States of a background job that may still change files.
_LIVE_JOB_STATES = frozenset({"running", "queued"})
# The folder of the history's directory (out of every confined command's reach) holding
# the files stockade processes flock against each other, four per real path: `call` and
# `job` (a call's window, a background job's life, writing that path as a root: shared),
# `call-below` and `job-below` (one writing a root within that path: shared). An undo of
# R takes `call` and `job` of R and of every folder above it, `call-below` and `job-below`
# of R, exclusive: it meets every writer of R, of a root above R and of one within R,
# and no writer of a root beside R (a call's or a job's are apart to say which it met).
_LOCKS = "locks"
# How often a window waiting for another process's undo tries the lock again.
_LOCK_POLL = 0.02
# How often a background job's hold looks whether it ended, when the executor cannot
# be waited on.
_JOB_POLL = 0.25


class UndoRefused(StockadeError):
    """An undo or a restore that was not done (nothing was changed): `reason` says what
    to do, `conflicts` name each path and the later call that changed it."""

    def __init__(
        self,
        reason: str,
        conflicts: Sequence[str] = (),
        conflicting_calls: Sequence[int] = (),
    ) -> None:
        self.reason = reason
        self.conflicts = tuple(conflicts)
        self.conflicting_calls = tuple(conflicting_calls)
        line = reason
        if self.conflicts:
            more = len(self.conflicts) - 1
            line += f" ({self.conflicts[0]}" + (f"; and {more} more)" if more else ")")
        # A path is a command's choice: a newline or an escape in a name must not
        # split this line or act on a terminal that prints it.
        super().__init__(one_line(line))


@attrs.frozen
class UndoableCall:
    """A call of the session whose changes are recorded."""

    __repr__ = fields_repr

    seq: int  # the call's tool/call event seq
    tool: str  # "bash", "write_file", ...
    summary: str  # the command (first line, bounded) or the path
    created: int
    modified: int
    deleted: int
    undone: bool  # an undo of it is already in the log


@attrs.frozen
class HistorySetup:
    """How a harness keeps history: the config of every root's tracker, how long a call
    waits for a root's first look, and where the stores go (`directory`, made when
    first needed; `scratch`: removed when the harness stops, for logs that die with the
    process). `off`: why history is not kept at all (None: it is)."""

    __repr__ = fields_repr

    config: HistoryConfig = attrs.field(factory=HistoryConfig)
    baseline_wait: float = 10.0
    directory: str = ""
    scratch: bool = False
    off: str | None = None


def root_id(root: str) -> str:
    """The name of a root's store: a hash of its real path."""
    return hashlib.sha256(os.fsencode(os.path.realpath(root))).hexdigest()[:24]


@attrs.define(eq=False)
class _Root:
    """One root's tracker, opened in a thread of its own (a large root's first look may
    outlast a call's wait; it finishes meanwhile)."""

    __repr__ = fields_repr

    path: str
    store_dir: str
    tracker: Tracker | None = None
    failed: str | None = None
    # Why its history stopped (past a budget: paths, ignore rules), for the harness's life; and
    # the sessions whose logs say so already.
    stopped: str | None = None
    told: set[str] = attrs.field(factory=set)
    done: threading.Event = attrs.field(factory=threading.Event)
    lock: threading.Lock = attrs.field(factory=threading.Lock)
    closed: bool = False
    # One task at a time waits on the tracker's descriptor (trio allows one waiter).
    drain_lock: trio.Lock = attrs.field(factory=trio.Lock)


@attrs.define(eq=False)
class _SharedFile:
    """One lock file this harness's calls and jobs share (flock, shared): opened once
    and kept (a call's window then costs a flock and an unlock per file, not an open),
    locked while one of them uses it."""

    __repr__ = fields_repr

    fd: int
    users: int = 0
    locked: bool = False

    def leave(self) -> None:
        self.users -= 1
        if self.users == 0 and self.locked:
            self.locked = False
            if self.fd >= 0:  # closed with the harness: nothing to unlock
                fcntl.flock(self.fd, fcntl.LOCK_UN)


@attrs.define(eq=False)
class _Flocks:
    """Lock files a call or a job uses, left together; `release` more than once is
    harmless."""

    __repr__ = fields_repr

    files: list[_SharedFile] = attrs.field(factory=list)

    def release(self) -> None:
        files, self.files = self.files, []
        for file in files:
            file.leave()


@attrs.define(eq=False)
class _JobHold:
    """A background job's hold on the roots it writes (`paths`, real), against another
    stockade process's undo: from before it starts until the executor says it ended."""

    __repr__ = fields_repr

    paths: tuple[str, ...]
    flocks: _Flocks
    job: str | None = None
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)


Appender = Callable[[SessionEvent], Any]
# Every background job of the harness, as the executor lists them (any session's).
JobLister = Callable[[], Awaitable[Sequence[Any]]]
# Returns once the executor's job of that id has ended (its process group reaped).
JobWaiter = Callable[[str], Awaitable[Any]]


@attrs.define(eq=False)
class Histories:
    """Every root's history in one harness, and every session's hold against its undo.

    `protected`: whether a path is beyond every confined command's reach (the harness's
    `out_of_confined_reach`); `untrusted`: why a store directory could be swapped by a
    command writing `root` (None: it could not); `jobs`: every background job of the
    harness (a job writing a root while a call's window is open makes its record
    partial; while one runs there, an undo of that root is refused); `wait_job`: returns
    when the executor's job of that id has ended (or raises: it is gone).

    Calls and undos meet by the paths they write, not by root: an undo of R waits for
    every call (and every job starting) that writes R, a root above R or one within R,
    its workspace root or one of its extra writable roots."""

    __repr__ = fields_repr

    setup: HistorySetup
    protected: Callable[[str], bool]
    untrusted: Callable[[str, str], str | None]
    jobs: JobLister | None = None
    wait_job: JobWaiter | None = None
    _roots: dict[str, _Root] = attrs.field(factory=dict)
    # The real paths this harness's calls (and jobs starting) write now, and how many.
    _writing: dict[str, int] = attrs.field(factory=dict)
    # The roots an undo (or restore) of this harness has, each set when it ends.
    _undoing: dict[str, trio.Event] = attrs.field(factory=dict)
    # Set (and replaced) when a call stops writing while an undo is under way.
    _quieter: trio.Event = attrs.field(factory=trio.Event)
    _job_holds: list[_JobHold] = attrs.field(factory=list)
    # The lock files this harness's calls and jobs have used, by (real path, kind).
    _lock_files: dict[tuple[str, str], _SharedFile] = attrs.field(factory=dict)
    _closed: bool = False

    @property
    def enabled(self) -> bool:
        return self.setup.off is None

    # --- the trackers ----------------------------------------------------------------------

    def _root(self, path: str) -> _Root:
        """`path`'s root (by its real path), its tracker's opening started if new."""
        root = os.path.realpath(path)
        found = self._roots.get(root)
        if found is None:
            found = _Root(root, os.path.join(self.setup.directory, root_id(root)))
            self._roots[root] = found
            problem = self._store_problem(found)
            if problem is not None:
                found.failed = problem
                found.done.set()
            else:
                threading.Thread(
                    target=self._open, args=(found,), name="stockade-history-open", daemon=True
                ).start()
        return found

    def _store_problem(self, root: _Root) -> str | None:
        # The lock files too: a command that could swap them would hold no lock an
        # undo meets.
        for directory in (root.store_dir, self._locks_dir):
            if not self.protected(directory):
                return (
                    f"the undo history's store {directory} would be readable by confined "
                    "commands (deny_read does not hide it); keep the state directory hidden"
                )
            problem = self.untrusted(directory, root.path)
            if problem is not None:
                return problem
        return None

    def _open(self, root: _Root) -> None:
        """In a thread of its own: the root's first look, its store opened."""
        from ..history import HistoryError, OverBudget, SnapshotStore, StoreError, Tracker

        tracker = None
        try:
            store = SnapshotStore.open(root.store_dir)
            try:
                tracker = Tracker.open(root.path, store, self.setup.config)
            except BaseException:
                store.close()
                raise
        except OverBudget as over:
            root.stopped = self._stopped_line(root.path, over)  # it never starts
        except (OSError, HistoryError, StoreError) as error:
            root.failed = f"the undo history of {root.path} cannot be kept: {_one_line(error)}"
        with root.lock:
            if tracker is not None and (self._closed or root.closed):
                _close_tracker(tracker)
            elif tracker is not None:
                root.tracker = tracker
        root.done.set()

    async def tracker(self, root: str, wait: float | None) -> Tracker | str:
        """`root`'s tracker, or why there is none now: waits for its first look at most
        `wait` seconds (None: as long as it takes)."""
        found = self._root(root)
        if not found.done.is_set():
            if wait is None:
                await trio.to_thread.run_sync(found.done.wait, abandon_on_cancel=True)
            elif wait > 0:
                await trio.to_thread.run_sync(found.done.wait, wait, abandon_on_cancel=True)
        if found.tracker is not None:
            return found.tracker
        if found.stopped is not None:
            return found.stopped
        if found.failed is not None:
            return found.failed
        return (
            f"the first look at {found.path} is still running (it is recorded from the "
            "first call after it ends)"
        )

    # --- a root past a budget (paths, ignore rules) -----------------------------------------

    def _stopped_line(self, root: str, over: OverBudget | None) -> str:
        if over is not None and over.kind == "rules":
            return (
                f"the undo history of {root} stopped: it {over.why}; "
                "undo is unavailable there: raise the budget or shorten its ignore files, "
                "then restart the harness"
            )
        budget = self.setup.config.paths_budget
        return (
            f"the undo history of {root} stopped: it holds more than {budget:,} paths "
            "(history.paths_budget); undo is unavailable there: raise the budget or leave the "
            "bulk's directories out in .gitignore, then restart the harness"
        )

    def _stopped_root(self, path: str) -> _Root | None:
        """`path`'s root when its history stopped (without starting one)."""
        found = self._roots.get(os.path.realpath(path))
        return found if found is not None and found.stopped is not None else None

    async def stop(self, root: _Root) -> str:
        """`root`'s tracker stopped itself (past a budget): drop it and close
        its store (nothing in it is deleted), for the harness's life; the line that says
        so, for a call's result and an undo's refusal."""
        with root.lock:
            tracker, root.tracker = root.tracker, None
            if root.stopped is None:
                over = tracker.stopped if tracker is not None else None
                root.stopped = self._stopped_line(root.path, over)
            line = root.stopped
        if tracker is not None:
            await trio.to_thread.run_sync(_close_tracker, tracker)
        return line

    async def tell_stopped(self, root: _Root, session: Session, call: int | None) -> None:
        """Say once in `session`'s log that `root`'s history stopped, and why."""
        if root.stopped is None or session.id in root.told:
            return
        root.told.add(session.id)
        await session.append(HistoryStopped(root=root.path, reason=root.stopped, call=call))

    async def stopped_facts(self, root: _Root, session: Session, call: int) -> dict[str, Any]:
        """A call's `changed` facts when its window found the root past its budget."""
        line = await self.stop(root)
        await self.tell_stopped(root, session, call)
        return {"recorded": False, "reason": line}

    # --- calls against undos, in this harness and across stockade processes ----------------

    @property
    def _locks_dir(self) -> str:
        return os.path.join(self.setup.directory, _LOCKS)

    def _undo_over(self, paths: Sequence[str]) -> trio.Event | None:
        """The end of an undo whose root meets one of `paths` (None: none runs); no
        undo running (nearly always), a look at an empty dict."""
        for undone, ended in self._undoing.items():
            if any(_meet(undone, path) for path in paths):
                return ended
        return None

    @contextlib.asynccontextmanager
    async def writing(self, paths: Sequence[str]) -> AsyncIterator[None]:
        """A call (or a job starting) writing `paths` (real): never while an undo of a
        root that meets one of them runs; an undo waits for it to end."""
        while (ended := self._undo_over(paths)) is not None:
            await ended.wait()
        for path in paths:
            self._writing[path] = self._writing.get(path, 0) + 1
        try:
            yield
        finally:
            for path in paths:
                left = self._writing[path] - 1
                if left:
                    self._writing[path] = left
                else:
                    del self._writing[path]
            if self._undoing:
                self._quieter.set()
                self._quieter = trio.Event()

    @contextlib.asynccontextmanager
    async def alone(self, root: str) -> AsyncIterator[None]:
        """An undo of `root` alone in this harness: no call writes `root`, a root above
        it or one within it meanwhile, and it starts once every such call has ended
        (the calls that come after it wait: it is not starved). One undo of this harness
        at a time, whatever its root: two beside each other would refuse each other on
        the lock files of the folders above both (`_exclusive`)."""
        while self._undoing:
            await next(iter(self._undoing.values())).wait()
        ended = self._undoing[root] = trio.Event()
        try:
            while any(_meet(root, path) for path in self._writing):
                await self._quieter.wait()
            yield
        finally:
            del self._undoing[root]
            ended.set()

    @contextlib.asynccontextmanager
    async def shared(self, paths: Sequence[str]) -> AsyncIterator[None]:
        """A call's window against another stockade process's undo meeting `paths`."""
        flocks = await self.take_shared(paths, job=False)
        try:
            yield
        finally:
            flocks.release()

    async def take_shared(self, paths: Sequence[str], *, job: bool) -> _Flocks:
        """The lock files of a writer of `paths` (a call's window, or a job's life),
        shared: each path's own, and `-below` of each folder above it. Waits while
        another stockade process's undo has one (polling: a cancelled wait leaves no
        thread holding a lock); that undo never waits for them, so no order of taking
        them can deadlock."""
        here, below = ("job", "job-below") if job else ("call", "call-below")
        wanted = dict.fromkeys((path, here) for path in paths)
        for path in paths:
            for folder in _above(path):
                # A root holding the history's directory never has a history (its
                # store is not trusted, `_store_problem`), so no undo of it to meet:
                # its `-below`, and every folder's above it, is not taken (most of a
                # deep path's folders, when the state directory is in the home).
                if _under(self.setup.directory, folder):
                    break
                wanted[folder, below] = None
        flocks = _Flocks()
        if self._closed:
            return flocks  # its files are closed: nothing of this harness runs on
        try:
            for key in wanted:
                file = self._lock_files.get(key)
                if file is None:
                    try:
                        fd = _lock_file(self._locks_dir, *key)
                    except OSError:
                        continue  # the history's directory is gone: the window will say so
                    file = self._lock_files[key] = _SharedFile(fd)
                while not file.locked:
                    if file.fd < 0:
                        break  # closed with the harness while this waited
                    if _try_lock(file.fd, fcntl.LOCK_SH):
                        file.locked = True
                    else:
                        await trio.sleep(_LOCK_POLL)
                file.users += 1
                flocks.files.append(file)
        except BaseException:
            flocks.release()
            raise
        return flocks

    async def keep_for_job(
        self, paths: tuple[str, ...], flocks: _Flocks, started: str | None = None
    ) -> None:
        """Hold `flocks` (a job's, taken before it started) until the job the executor
        just started with `paths` (its id `started`, when the caller said) has ended.
        Without the id, the job is looked for among the live ones: jobs started with the
        same paths take the same locks, so which of them a hold follows does not matter;
        one that cannot be looked for is held until the harness closes (refusing another
        process's undo a while too long, never letting one run over the job)."""
        if started is not None:
            hold = _JobHold(paths, flocks, started)
            self._job_holds.append(hold)
            trio.lowlevel.spawn_system_task(self._keep, hold)
            return
        job = None
        listed_ok = False
        if self.jobs is not None and not self._closed:
            with contextlib.suppress(Exception):  # not listed: it cannot be followed
                claimed = {hold.job for hold in self._job_holds}
                listing = await self.jobs()
                listed_ok = True
                job = next(
                    (
                        listed
                        for listed in reversed(listing)
                        if listed.state in _LIVE_JOB_STATES
                        and listed.id not in claimed
                        and _job_writes(listed) == paths
                    ),
                    None,
                )
        if job is None:
            if listed_ok:  # ended already: nothing of it left to hold for
                flocks.release()
            else:  # cannot be followed: held until an undo finds no job or the harness closes
                self._job_holds.append(_JobHold(paths, flocks))
            return
        hold = _JobHold(paths, flocks, job.id)
        self._job_holds.append(hold)
        trio.lowlevel.spawn_system_task(self._keep, hold)

    async def _keep(self, hold: _JobHold) -> None:
        """Wait for `hold`'s job to end, then let go (a system task: it must never raise)."""
        assert hold.job is not None
        try:
            with hold.scope:
                if self.wait_job is not None:
                    # Returns once the job ended; raises once it was forgotten (it ended)
                    # or the executor is gone (its jobs with it).
                    with contextlib.suppress(Exception):
                        await self.wait_job(hold.job)
                    return
                while True:
                    await trio.sleep(_JOB_POLL)
                    try:
                        listed = await self.jobs() if self.jobs is not None else []
                    except Exception:  # the executor is gone: its jobs with it
                        return
                    if not any(j.id == hold.job and j.state in _LIVE_JOB_STATES for j in listed):
                        return
        finally:
            self._let_go(hold)

    def _let_go(self, hold: _JobHold) -> None:
        hold.flocks.release()
        hold.scope.cancel()
        with contextlib.suppress(ValueError):
            self._job_holds.remove(hold)

    @contextlib.asynccontextmanager
    async def reverting(self, root: str, kind: str) -> AsyncIterator[None]:
        """An undo (or restore) of `root` alone: this harness's calls meeting it ended
        and the next wait; refused while a background job of any session meets it, or
        while another stockade process has a call, a job or an undo meeting it."""
        async with self.alone(root):
            # A job writing the root could change a path between the plan's look and
            # the apply, and the apply would overwrite it: refused. Asked with the root
            # held, so no call of this harness starts one meanwhile.
            try:
                running = await self.live_jobs(root)
            except Exception as error:
                raise UndoRefused(
                    f"cannot tell whether a background job runs in {root}: {_one_line(error)}"
                ) from None
            if running:
                names = ", ".join(job.id for job in running)
                raise UndoRefused(
                    f"background job {names} is still running in {root}; wait for it or "
                    f"kill it (kill_job in the session that started it), then {kind} again"
                )
            # Every job of ours meeting the root has ended: a hold still on its locks
            # (its task has not run since) is let go, or it would refuse this undo.
            for hold in list(self._job_holds):
                if any(_meet(root, path) for path in hold.paths):
                    self._let_go(hold)
            async with _exclusive(self._locks_dir, root, kind):
                yield

    async def live_jobs(self, root: str) -> list[Any]:
        """The background jobs of any session still running (or queued) that write
        `root`, a root above it or one within it."""
        if self.jobs is None:
            return []
        return _live_in(root, await self.jobs())

    def close(self) -> None:
        """Close every tracker (an open still running closes its own when it ends), and
        remove a scratch directory."""
        self._closed = True
        for hold in list(self._job_holds):
            self._let_go(hold)
        for file in self._lock_files.values():
            # A window still open leaves it later: its fd must not be a reused number.
            fd, file.fd = file.fd, -1
            os.close(fd)
        self._lock_files.clear()
        for root in self._roots.values():
            with root.lock:
                root.closed = True
                tracker, root.tracker = root.tracker, None
            if tracker is not None:
                _close_tracker(tracker)
        self._roots.clear()
        if self.setup.scratch and self.setup.directory:
            shutil.rmtree(self.setup.directory, ignore_errors=True)

    # --- a call's window ------------------------------------------------------------------

    def recorder(self, session: Session, call_seq: int) -> CallWindow:
        return CallWindow(self, session, call_seq)

    async def drain_while(self, scope: trio.CancelScope, root: _Root, tracker: Tracker) -> None:
        """`_drain` until `scope` is cancelled (a system task: it must never raise)."""
        with scope:
            try:
                await self._drain(root, tracker)
            except Exception:  # a draining lost costs a full look at the boundary, no more
                return

    async def _drain(self, root: _Root, tracker: Tracker) -> None:
        """Read the kernel's events while a call runs, so thousands of changes do not
        overflow its queue (a full look then: correct, slower)."""
        while True:
            fd = tracker.fileno()
            if fd is None:
                return
            async with root.drain_lock:
                with trio.move_on_after(1.0):
                    await trio.lowlevel.wait_readable(fd)
            if tracker.fileno() != fd:
                return
            try:
                await trio.to_thread.run_sync(tracker.drain)
            except OSError:
                return

    # --- undo, restore --------------------------------------------------------------------

    async def undoable_calls(self, session: Session) -> list[UndoableCall]:
        """The session's recorded calls; refused (UndoRefused, the line saying why and
        what to do) where the workspace's history stopped, as an undo there would be:
        none of them can be undone while it is."""
        if self.enabled:
            halted = self._stopped_root(session.cwd or session.defaults.fallback_root)
            if halted is not None and halted.stopped is not None:
                await self.tell_stopped(halted, session, None)
                raise UndoRefused(halted.stopped)
        events = await session.events()
        undone = {e.call for e in events if isinstance(e, FilesUndone)}
        calls: list[UndoableCall] = []
        for event in events:
            if isinstance(event, FilesChanged) and not event.outside and event.call is not None:
                called = _event_at(events, event.call)
                tool = called.name if isinstance(called, ToolCalled) else "?"
                calls.append(
                    UndoableCall(
                        seq=event.call,
                        tool=tool,
                        summary=_summary(called),
                        created=event.change.created,
                        modified=event.change.modified,
                        deleted=event.change.deleted,
                        undone=event.call in undone,
                    )
                )
        return calls

    async def revert(
        self, session: Session, kind: Literal["undo", "restore"], target: int
    ) -> UndoOutcome:
        """Undo call `target`, or restore to before seq `target`: refused (UndoRefused,
        nothing touched) when it cannot be done whole."""
        if not self.enabled:
            raise UndoRefused(f"undo history is off in this harness: {self.setup.off}")
        if isinstance(target, bool) or not isinstance(target, int):
            raise UndoRefused(f"{kind} takes a seq (an integer), not {target!r}")
        workspace = session.cwd or session.defaults.fallback_root
        halted = self._stopped_root(workspace)
        if halted is not None and halted.stopped is not None:
            # Said before the seq is judged: no call there can be undone now.
            await self.tell_stopped(halted, session, None)
            raise UndoRefused(halted.stopped)
        events = await session.events()
        _check_target(events, kind, target)
        opened = self._root(workspace)
        root = opened.path
        found = await self.tracker(root, None)
        if isinstance(found, str):
            await self.tell_stopped(opened, session, None)
            raise UndoRefused(found)
        tracker = found
        listed = self.setup.config.listed_paths
        async with self.reverting(root, kind):
            try:
                started = await trio.to_thread.run_sync(tracker.before)
            except Exception as error:
                if not _is_over_budget(error):
                    raise
                line = await self.stop(opened)
                await self.tell_stopped(opened, session, None)
                raise UndoRefused(line) from None
            try:
                if started.outside:
                    await session.append(
                        FilesChanged(
                            call=None,
                            outside=True,
                            change=ChangeSummary.of(started.outside, listed),
                        )
                    )
                refs = fold_history(await session.events())

                def plan() -> tuple[Plan, list[Record]]:
                    records = tracker.records(refs)
                    if kind == "undo":
                        return tracker.plan_undo(records, target), records
                    return tracker.plan_restore(records, target), records

                planned, records = await trio.to_thread.run_sync(plan)
                if planned.blocked:
                    # A later call is named by its own seq (what undoable_calls lists),
                    # an outside change, an undo or a restore by its event's.
                    named = {r.seq: r.call if r.kind == "call" else r.seq for r in records}
                    raise UndoRefused(
                        f"cannot {_goal(kind, target)}: later changes touch what it would put "
                        "back; undo those first, or restore to an earlier point",
                        [str(c) for c in planned.conflicts],
                        sorted({named.get(seq) or seq for seq in planned.conflicting_calls}),
                    )
                applied = await trio.to_thread.run_sync(tracker.apply, planned)
            except BaseException as error:
                with trio.CancelScope(shield=True):
                    try:
                        await trio.to_thread.run_sync(tracker.after, started.mark)
                    except Exception as closing:
                        if not _is_over_budget(closing):
                            raise
                        await self.stop(opened)
                        await self.tell_stopped(opened, session, None)
                if _is_store_error(error):
                    raise UndoRefused(
                        f"cannot {_goal(kind, target)}: {_one_line(error)}; nothing was changed"
                    ) from None
                raise
            with trio.CancelScope(shield=True):
                stopped = False
                try:
                    change = await trio.to_thread.run_sync(tracker.after, started.mark)
                except Exception as error:
                    if not _is_over_budget(error):
                        raise
                    # What it put back made the root pass its budget: the undo is done,
                    # its own record cannot be kept (no manifest); the event says what
                    # it did from the plan, and then that the history stopped.
                    await self.stop(opened)
                    change = _done_by(planned, applied)
                    stopped = True
                summary = ChangeSummary.of(change, listed)
                # The first `listed` of each, and how many more: a command chooses how
                # many paths an undo leaves, and the event is a line of the log.
                left = tuple(f"{_shown(p)}: {why}" for p, why in applied.left[:listed])
                unrecorded = tuple(_shown(p) for p in planned.unrecorded[:listed])
                left_unlisted = len(applied.left) - len(left)
                unrecorded_unlisted = len(planned.unrecorded) - len(unrecorded)
                event: SessionEvent
                if kind == "undo":
                    event = FilesUndone(
                        call=target,
                        change=summary,
                        left=left,
                        unrecorded=unrecorded,
                        left_unlisted=left_unlisted,
                        unrecorded_unlisted=unrecorded_unlisted,
                    )
                else:
                    event = FilesRestored(
                        before=target,
                        change=summary,
                        left=left,
                        unrecorded=unrecorded,
                        left_unlisted=left_unlisted,
                        unrecorded_unlisted=unrecorded_unlisted,
                    )
                (stamped,) = await session.append(event)
                if stopped:
                    await self.tell_stopped(opened, session, None)
        assert isinstance(stamped, FilesUndone | FilesRestored)
        return UndoOutcome.of(stamped)


@attrs.frozen
class CallWindow:
    """The recorder one call hands its tool: the window around what may write."""

    __repr__ = fields_repr

    histories: Histories
    session: Session
    call: int

    @contextlib.asynccontextmanager
    async def starting(self, policy: ExecutionPolicy) -> AsyncIterator[JobStart]:
        """A background job starts writing its roots: never while an undo meeting them
        runs (the undo looked for running jobs once, when it had the roots alone); its
        lock files against another process's undo are held until it has ended (the
        caller sets `job` to the id the executor gave it)."""
        started = JobStart()
        histories = self.histories
        if policy.mode is SandboxMode.READ_ONLY or not histories.enabled:
            yield started
            return
        root = histories._root(policy.workspace_root)
        paths = _writes(root.path, policy)
        async with histories.writing(paths):
            # Held for the job's life, so another stockade process's undo (the person's
            # `stockade session undo`) meets it too. A root whose store failed has no
            # undo to meet, and its lock files may be beyond trust.
            flocks = _Flocks()
            if root.failed is None:
                flocks = await histories.take_shared(paths, job=True)
            try:
                yield started
            except BaseException:
                flocks.release()
                raise
            with trio.CancelScope(shield=True):  # the job runs: its locks must not be lost
                await histories.keep_for_job(paths, flocks, started.job)

    @contextlib.asynccontextmanager
    async def window(self, policy: ExecutionPolicy) -> AsyncIterator[Recorded]:
        recorded = Recorded()
        histories = self.histories
        if policy.mode is SandboxMode.READ_ONLY or not histories.enabled:
            yield recorded
            return
        root = histories._root(policy.workspace_root)
        found = await histories.tracker(root.path, histories.setup.baseline_wait)
        if isinstance(found, str):
            recorded.facts = {"recorded": False, "reason": found}
            await histories.tell_stopped(root, self.session, self.call)
            yield recorded
            return
        tracker = found
        listed = histories.setup.config.listed_paths
        paths = _writes(root.path, policy)
        async with histories.writing(paths), histories.shared(paths):
            opened_at = time.time()
            jobs_then: list[Any] | None = None
            with contextlib.suppress(Exception):  # unknown: the facts say so
                jobs_then = await histories.live_jobs(root.path)
            try:
                started = await trio.to_thread.run_sync(tracker.before)
            except Exception as error:  # the history failing never fails the call
                if _is_over_budget(error):
                    recorded.facts = await histories.stopped_facts(root, self.session, self.call)
                else:
                    recorded.facts = _unrecorded("its start could not be recorded", error)
            if recorded.facts is not None:
                yield recorded
                return
            try:
                if started.outside:
                    await self.session.append(
                        FilesChanged(
                            call=self.call,
                            outside=True,
                            change=ChangeSummary.of(started.outside, listed),
                        )
                    )
                # Beside the call, not around it: a nursery would wrap the tool's own
                # errors (a refused root) in an exception group.
                draining = trio.CancelScope()
                trio.lowlevel.spawn_system_task(histories.drain_while, draining, root, tracker)
                try:
                    yield recorded
                finally:
                    draining.cancel()
            finally:
                with trio.CancelScope(shield=True):
                    try:
                        change = await trio.to_thread.run_sync(tracker.after, started.mark)
                    except Exception as error:
                        if _is_over_budget(error):
                            recorded.facts = await histories.stopped_facts(
                                root, self.session, self.call
                            )
                        else:
                            recorded.facts = _unrecorded(
                                "what it changed could not be recorded", error
                            )
                    else:
                        summary = ChangeSummary.of(change, listed)
                        if change:
                            await self.session.append(FilesChanged(call=self.call, change=summary))
                        recorded.facts = _facts(summary, change)
                        partial = await _jobs_meanwhile(histories, root.path, opened_at, jobs_then)
                        if partial is not None:
                            recorded.facts["partial"] = partial


def _path_id(real: str) -> str:
    return hashlib.sha256(os.fsencode(real)).hexdigest()[:24]


def _above(path: str) -> list[str]:
    """Every folder above the real path `path`, "/" last."""
    folders = []
    parent = os.path.dirname(path)
    while parent != path:
        folders.append(parent)
        path, parent = parent, os.path.dirname(parent)
    return folders


def _under(path: str, folder: str) -> bool:
    return path.startswith(folder.rstrip("/") + "/")


def _meet(one: str, other: str) -> bool:
    """Whether writing one of two real paths may write the other's tree."""
    return one == other or _under(one, other) or _under(other, one)


def _writes(root: str, policy: ExecutionPolicy) -> tuple[str, ...]:
    """The real paths a call or job under `policy` writes: its workspace root (`root`,
    real already) and its extra writable roots."""
    if not policy.extra_roots:
        return (root,)
    return tuple(dict.fromkeys((root, *map(os.path.realpath, policy.extra_roots))))


def _job_writes(job: Any) -> tuple[str, ...]:
    return _writes(os.path.realpath(job.policy.workspace_root), job.policy)


def _lock_file(locks_dir: str, path: str, kind: str) -> int:
    name = os.path.join(locks_dir, f"{_path_id(path)}.{kind}")
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(name, flags, 0o600)
    except FileNotFoundError:
        os.makedirs(locks_dir, mode=0o700, exist_ok=True)
        return os.open(name, flags, 0o600)


def _try_lock(fd: int, how: int) -> bool:
    try:
        fcntl.flock(fd, how | fcntl.LOCK_NB)
    except OSError as error:
        if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return False
        raise
    return True


@contextlib.asynccontextmanager
async def _exclusive(locks_dir: str, root: str, kind: str) -> AsyncIterator[None]:
    """An undo against every other stockade process's calls, jobs and undos meeting
    `root`: refused while one runs, and their calls wait while it runs. The calls' locks
    first: an undo meeting this one holds those too, so a job's that is taken says a job."""
    ours = (*_above(root), root)
    wanted = [
        *((path, "call") for path in ours),
        (root, "call-below"),
        *((path, "job") for path in ours),
        (root, "job-below"),
    ]
    # Opened for this undo alone: this harness's own files are the calls' and jobs'.
    fds: list[int] = []
    try:
        for path, lock in wanted:
            try:
                fds.append(_lock_file(locks_dir, path, lock))
            except OSError as error:
                raise UndoRefused(
                    f"cannot lock {root} for the {kind}: {_one_line(error)}"
                ) from None
            if not _try_lock(fds[-1], fcntl.LOCK_EX):
                raise UndoRefused(_busy(root, path, lock, kind))
        yield
    finally:
        for fd in fds:
            os.close(fd)


def _busy(root: str, path: str, lock: str, kind: str) -> str:
    """Why an undo of `root` was refused: another process holds `lock` of `path`."""
    if lock.endswith("-below"):
        where = f"in a folder within {root}"
    elif path == root:
        where = f"in {root}"
    else:
        where = f"in {path}, which holds {root}"
    if lock.startswith("job"):
        return (
            f"a background job of another stockade process is running {where}; wait for "
            f"it or kill it (kill_job in the session that started it), then {kind} again"
        )
    return (
        f"another stockade process has a call running {where} (or an undo); try again when it ends"
    )


def _unrecorded(what: str, error: Exception) -> dict[str, Any]:
    return {"recorded": False, "reason": f"{what} in the undo history: {_one_line(error)}"}


async def _jobs_meanwhile(
    histories: Histories, root: str, opened_at: float, live_then: Sequence[Any] | None
) -> str | None:
    """Why a window's record may hold what a background job wrote (None: no job could
    have): one was running in `root` when it opened or when it closed, or started since."""
    if histories.jobs is None:
        return None
    unknown = "whether a background job wrote the workspace meanwhile is unknown"
    if live_then is None:
        return f"{unknown} (the jobs could not be listed)"
    try:
        listed = await histories.jobs()
    except Exception as error:
        return f"{unknown} (the jobs could not be listed: {_one_line(error)})"
    now = [
        job
        for job in _in_root(root, listed)
        if job.state in _LIVE_JOB_STATES or job.started_at >= opened_at
    ]
    jobs = sorted({job.id for job in (*live_then, *now)})
    if not jobs:
        return None
    return (
        f"background job {', '.join(jobs)} ran in the workspace meanwhile: what it changed "
        "is counted as this call's"
    )


def _in_root(root: str, jobs: Sequence[Any]) -> list[Any]:
    """The jobs writing `root`, a root above it or one within it."""
    return [job for job in jobs if any(_meet(root, path) for path in _job_writes(job))]


def _live_in(root: str, jobs: Sequence[Any]) -> list[Any]:
    """The jobs still running (or queued) that write `root` (as `_in_root`)."""
    return [job for job in _in_root(root, jobs) if job.state in _LIVE_JOB_STATES]


def _facts(summary: ChangeSummary, change: Change) -> dict[str, Any]:
    facts: dict[str, Any] = {"recorded": True, **summary.facts()}
    if change.rescanned:
        facts["rescanned"] = change.rescanned
    if change.concurrent:
        facts["concurrent"] = True
    return facts


def _check_target(events: Sequence[SessionEvent], kind: str, target: int) -> None:
    last = events[-1].seq if events else 0
    if kind == "undo":
        if any(isinstance(e, FilesChanged) and not e.outside and e.call == target for e in events):
            return
        called = _event_at(events, target)
        if isinstance(called, ToolCalled):
            raise UndoRefused(
                f"call {target} ({called.name}) changed nothing that was recorded; there is "
                "nothing to undo (undoable_calls lists the calls that did)"
            )
        raise UndoRefused(
            f"seq {target} is not a call of this session (its log ends at seq {last}); "
            "undoable_calls lists the calls that can be undone"
        )
    if not 1 <= target <= last:
        raise UndoRefused(
            f"seq {target} is not in this session's log (it holds seqs 1 to {last}); name the "
            "seq of the call to restore to before"
        )
    if not any(
        isinstance(e, FilesChanged | FilesUndone | FilesRestored) and e.seq > target for e in events
    ):
        raise UndoRefused(
            f"nothing was recorded after seq {target}: the workspace is as it was then"
        )


def _event_at(events: Sequence[SessionEvent], seq: int) -> SessionEvent | None:
    if 1 <= seq <= len(events) and events[seq - 1].seq == seq:
        return events[seq - 1]
    return next((e for e in events if e.seq == seq), None)


def _summary(called: SessionEvent | None) -> str:
    if not isinstance(called, ToolCalled):
        return ""
    arguments = called.arguments
    text = arguments.get("command") or arguments.get("path") or ""
    if not isinstance(text, str):
        text = repr(text)
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= SUMMARY_LIMIT else first[: SUMMARY_LIMIT - 3] + "..."


def _goal(kind: str, target: int) -> str:
    return f"undo call {target}" if kind == "undo" else f"restore to before seq {target}"


def _shown(path: str) -> str:
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


def _is_store_error(error: BaseException) -> bool:
    from ..history import StoreError

    return isinstance(error, StoreError)


def _is_over_budget(error: BaseException) -> bool:
    """The root's tracker stopped itself: past its paths or its ignore rules' budget."""
    from ..history import OverBudget

    return isinstance(error, OverBudget)


def _done_by(plan: Plan, applied: Applied) -> Change:
    """What an apply did by its plan (for an undo whose own record could not be kept):
    each path it put back, from what it held to what the plan gave it."""
    from ..history import Change

    return Change(
        {p: (plan.expected.get(p), plan.targets[p]) for p in applied.done if p in plan.targets}
    )


def _close_tracker(tracker: Tracker) -> None:
    tracker.close()
    tracker.store.close()
