"""The history as a harness will drive it: a session whose calls run inside windows and
whose records live only as events (FilesChanged, FilesUndone, FilesRestored) with seqs,
turned back into records through `fold_history` and the store, as a resumed session
would. And a tree's state read independently of the code under test."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterable

import attrs
import msgspec

from stockade.events import SessionEvent
from stockade.history import (
    Applied,
    ChangeSummary,
    FilesChanged,
    FilesRestored,
    FilesUndone,
    Plan,
    Record,
    Tracker,
    fold_history,
)


def tree_state(root: str, *, leave_out: Iterable[str] = (".git",)) -> dict[str, tuple]:
    """Every path under `root` (links not followed): kind, permission bits and content
    or target, read with scandir, lstat and plain reads (nothing of the history's own)."""
    left_out = set(leave_out)
    state: dict[str, tuple] = {}
    stack = [""]
    while stack:
        directory = stack.pop()
        for item in os.scandir(os.path.join(root, directory) if directory else root):
            if item.name in left_out:
                continue
            path = f"{directory}/{item.name}" if directory else item.name
            st = os.lstat(item.path)
            if stat.S_ISLNK(st.st_mode):
                state[path] = ("link", os.readlink(item.path))
            elif stat.S_ISDIR(st.st_mode):
                state[path] = ("dir", stat.S_IMODE(st.st_mode))
                stack.append(path)
            elif stat.S_ISREG(st.st_mode):
                with open(item.path, "rb") as handle:
                    digest = hashlib.sha256(handle.read()).hexdigest()
                state[path] = ("file", stat.S_IMODE(st.st_mode), digest)
            else:
                state[path] = ("other", stat.S_IMODE(st.st_mode))
    return state


def tree_hash(root: str, **kwargs: Iterable[str]) -> str:
    return hashlib.sha256(repr(sorted(tree_state(root, **kwargs).items())).encode()).hexdigest()


@attrs.define
class Session:
    """One session over a shared tracker: its log is a list of events with seqs."""

    tracker: Tracker
    events: list[SessionEvent] = attrs.field(factory=list)
    seq: int = 0
    last_change: object = None

    def _append(self, event: SessionEvent) -> SessionEvent:
        self.seq += 1
        stamped = msgspec.structs.replace(event, seq=self.seq)
        self.events.append(stamped)
        return stamped

    def _summary(self, change) -> ChangeSummary:
        return ChangeSummary.of(change, 20)

    def call(self, action: Callable[[], object]) -> int:
        """Run `action` as one call; its seq (the seq of its tool/call event)."""
        started = self.tracker.before()
        if started.outside:
            self._append(
                FilesChanged(call=self.seq + 1, outside=True, change=self._summary(started.outside))
            )
        self.seq += 1  # the call's own tool/call event
        call_seq = self.seq
        action()
        change = self.tracker.after(started.mark)
        if change:
            self._append(FilesChanged(call=call_seq, change=self._summary(change)))
        self.last_change = change
        return call_seq

    def records(self) -> list[Record]:
        return self.tracker.records(fold_history(self.events))

    def _window(
        self, plan_of: Callable[[list[Record]], Plan], force: bool, event
    ) -> tuple[Plan, Applied | None]:
        started = self.tracker.before()
        if started.outside:
            self._append(
                FilesChanged(call=None, outside=True, change=self._summary(started.outside))
            )
        plan = plan_of(self.records())
        if plan.blocked and not force:
            self.tracker.after(started.mark)
            return plan, None
        applied = self.tracker.apply(plan)
        change = self.tracker.after(started.mark)
        left = tuple(f"{path}: {why}" for path, why in applied.left)
        self._append(event(change=self._summary(change), left=left))
        return plan, applied

    def undo(self, call: int, *, force: bool = False) -> tuple[Plan, Applied | None]:
        return self._window(
            lambda records: self.tracker.plan_undo(records, call),
            force,
            lambda **kw: FilesUndone(call=call, **kw),
        )

    def restore(self, before: int, *, force: bool = False) -> tuple[Plan, Applied | None]:
        return self._window(
            lambda records: self.tracker.plan_restore(records, before),
            force,
            lambda **kw: FilesRestored(before=before, **kw),
        )


def write(path: str, data: str | bytes, mode: int | None = None) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data.encode() if isinstance(data, str) else data)
    if mode is not None:
        os.chmod(path, mode)
