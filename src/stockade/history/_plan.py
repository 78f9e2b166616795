"""Undo and restore, decided over plain data: a session's records (each a change with its
place in the log), the tree's current state of the paths they name, and a plan of what
to put back, with everything that forbids it and everything it cannot give back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

import attrs

from ..reprs import fields_repr
from ._model import Entry, Pair, compose, parent_of, shown

RecordKind = Literal["call", "outside", "undo", "restore"]
# Why a path cannot be put back without overwriting something the history did not see.
CHANGED_OUTSIDE = "it changed since, outside this session's record"


@attrs.frozen
class Record:
    """One recorded change of a session, in log order.

    `seq` is its event's seq in the session log. `call` is, for a call's change, that
    call's seq; for changes found between calls, the call whose start found them (they
    happened before it); for an undo, the call undone; for a restore, the seq it went
    back to.
    """

    __repr__ = fields_repr

    seq: int
    kind: RecordKind
    call: int | None
    changes: Mapping[str, Pair]

    def name(self) -> str:
        if self.kind == "call":
            return f"call {self.call}"
        if self.kind == "outside":
            return f"a change outside any call (seq {self.seq})"
        if self.kind == "undo":
            return f"the undo of call {self.call} (seq {self.seq})"
        return f"the restore to seq {self.call} (seq {self.seq})"


@attrs.frozen
class Conflict:
    """Why `path` cannot be put back: `reason`, and the record that changed it since
    (its seq), when one did."""

    __repr__ = fields_repr

    path: str
    reason: str
    seq: int | None = None

    def __str__(self) -> str:
        return f"{shown(self.path)}: {self.reason}" if self.path else self.reason


@attrs.frozen
class Plan:
    """What an undo or a restore would put back.

    `targets`: each path and the state it gets (None: it must not exist); `expected`:
    what each must hold now for the plan to overwrite nothing unseen; `conflicts`: what
    forbids the plan; `unrecorded`: paths whose earlier state the store lacks (over the
    budget, unreadable, not a regular file), left as they are.
    """

    __repr__ = fields_repr

    goal: str
    targets: Mapping[str, Entry | None] = attrs.field(factory=dict)
    expected: Mapping[str, Entry | None] = attrs.field(factory=dict)
    conflicts: tuple[Conflict, ...] = ()
    unrecorded: tuple[str, ...] = ()

    @property
    def blocked(self) -> bool:
        return bool(self.conflicts)

    @property
    def conflicting_calls(self) -> list[int]:
        """The later records (their seqs) that changed what this plan would put back."""
        return sorted({c.seq for c in self.conflicts if c.seq is not None})


def paths_of(records: Iterable[Record]) -> set[str]:
    return {path for record in records for path in record.changes}


def _ancestors(path: str) -> Iterable[str]:
    while path:
        path = parent_of(path)
        if path:
            yield path


def undo_scope(records: Sequence[Record], call: int) -> set[str]:
    """The paths whose current state `plan_undo` needs."""
    record = _call_record(records, call)
    return set(record.changes) if record is not None else set()


def restore_scope(records: Sequence[Record], before: int) -> set[str]:
    """The paths whose current state `plan_restore` needs."""
    return paths_of(_after(records, before))


def _call_record(records: Sequence[Record], call: int) -> Record | None:
    return next((r for r in records if r.kind == "call" and r.call == call), None)


def plan_undo(records: Sequence[Record], call: int, current: Mapping[str, Entry | None]) -> Plan:
    """Revert what call `call` changed, if what came after left its paths (and, for a
    directory it made, what is inside) as the call left them, and each path still holds
    that now. Later records that cancel out (a call and its undo) forbid nothing."""
    goal = f"undo call {call}"
    record = _call_record(records, call)
    if record is None:
        return Plan(goal)
    later = records[records.index(record) + 1 :]
    net: dict[str, Pair] = {}
    touched_by: dict[str, list[Record]] = {}
    for other in later:
        net = compose(net, other.changes)
        for path in other.changes:
            touched_by.setdefault(path, []).append(other)
    made_dirs = {
        path
        for path, (before, after) in record.changes.items()
        if after is not None and after.kind == "dir" and (before is None or before.kind != "dir")
    }
    inside: dict[str, list[Record]] = {}
    for path in net:
        for above in _ancestors(path):
            if above in made_dirs:
                inside.setdefault(above, []).extend(touched_by[path])
    conflicts: list[Conflict] = []
    undone = [r for r in later if r.kind == "undo" and r.call == call]
    if undone and any(path in net for path in record.changes):
        conflicts.append(Conflict("", f"call {call} was already undone (seq {undone[-1].seq})"))
    targets: dict[str, Entry | None] = {}
    expected: dict[str, Entry | None] = {}
    unrecorded: list[str] = []
    for path, (before, after) in sorted(record.changes.items()):
        if path in net:
            conflicts += [
                Conflict(path, f"{other.name()} changed it since", other.seq)
                for other in touched_by[path]
            ]
        elif path in inside:
            conflicts += [
                Conflict(path, f"{other.name()} changed what is inside it", other.seq)
                for other in {r.seq: r for r in inside[path]}.values()
            ]
        elif current.get(path) != after:
            conflicts.append(Conflict(path, CHANGED_OUTSIDE))
        if before is not None and not before.recorded:
            unrecorded.append(path)
            continue
        targets[path] = before
        expected[path] = after
    return Plan(goal, targets, expected, tuple(conflicts), tuple(unrecorded))


def _after(records: Sequence[Record], before: int) -> list[Record]:
    """The records written after seq `before`, but not the changes found when call
    `before` started (those happened before it)."""
    return [r for r in records if r.seq > before and not (r.kind == "outside" and r.call == before)]


def plan_restore(
    records: Sequence[Record], before: int, current: Mapping[str, Entry | None]
) -> Plan:
    """Put every path back as it was before seq `before` (a call's seq: as before that
    call): every record after it reverted, each path to its state before the first."""
    goal = f"restore to before seq {before}"
    targets: dict[str, Entry | None] = {}
    expected: dict[str, Entry | None] = {}
    for record in _after(records, before):
        for path, (old, new) in record.changes.items():
            targets.setdefault(path, old)
            expected[path] = new
    conflicts = [
        Conflict(path, CHANGED_OUTSIDE)
        for path in sorted(expected)
        if current.get(path) != expected[path]
    ]
    kept: dict[str, Entry | None] = {}
    unrecorded: list[str] = []
    for path, target in sorted(targets.items()):
        if target is not None and not target.recorded:
            if current.get(path) != target:
                unrecorded.append(path)
            continue
        if current.get(path) != target:
            kept[path] = target
    return Plan(goal, kept, expected, tuple(conflicts), tuple(unrecorded))
