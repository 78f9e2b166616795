"""The history's session events (`files/changed`, `files/undone`, `files/restored`,
`files/stopped`), the bounded summary of a change they carry, and the fold that turns a
log into records.

An event carries counts and at most `listed_paths` paths of each kind it changed; the
full list is the manifest it names in the root's snapshot store, so a log stays small
whatever a call touched, and a resumed session knows its history. An undo's event lists
at most as many of the paths it could not do (`left`, `unrecorded`) and counts the rest:
a confined command chooses how many there are, and every replay decodes the line.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import attrs
import msgspec

from ..events import SessionEvent
from ..reprs import fields_repr
from ._model import Change, shown
from ._plan import RecordKind


class ChangeSummary(msgspec.Struct, frozen=True, omit_defaults=True, gc=False):
    """What a result and an event say of a change: counts, the first paths of each kind
    (shown escaped), the paths whose new state is not recorded, how it was found."""

    created: int = 0
    modified: int = 0
    deleted: int = 0
    created_paths: tuple[str, ...] = ()
    modified_paths: tuple[str, ...] = ()
    deleted_paths: tuple[str, ...] = ()
    unrecorded: int = 0
    unrecorded_paths: tuple[str, ...] = ()
    # Why those are not recorded (each reason once): over the size budget, past one
    # look's bytes budget, no room in the store, unreadable, not a regular file.
    unrecorded_why: tuple[str, ...] = ()
    manifest: str | None = None
    method: str = "watch"
    rescanned: str | None = None
    concurrent: bool = False

    @classmethod
    def of(cls, change: Change, limit: int) -> ChangeSummary:
        created, modified, deleted = change.created, change.modified, change.deleted
        unrecorded = change.unrecorded
        return cls(
            created=len(created),
            modified=len(modified),
            deleted=len(deleted),
            created_paths=tuple(shown(p) for p in created[:limit]),
            modified_paths=tuple(shown(p) for p in modified[:limit]),
            deleted_paths=tuple(shown(p) for p in deleted[:limit]),
            unrecorded=len(unrecorded),
            unrecorded_paths=tuple(shown(p) for p in unrecorded[:limit]),
            unrecorded_why=change.unrecorded_why,
            manifest=change.manifest,
            method=change.method,
            rescanned=change.rescanned,
            concurrent=change.concurrent,
        )

    @property
    def total(self) -> int:
        return self.created + self.modified + self.deleted

    def facts(self) -> dict[str, object]:
        """The `changed` facts of a call's result."""
        return {
            "created": self.created,
            "modified": self.modified,
            "deleted": self.deleted,
            "paths": {
                "created": list(self.created_paths),
                "modified": list(self.modified_paths),
                "deleted": list(self.deleted_paths),
            },
            "listed_all": len(self.created_paths)
            + len(self.modified_paths)
            + len(self.deleted_paths)
            == self.total,
            "not_recorded": list(self.unrecorded_paths),
            **self._why_not_recorded(),
        }

    def _why_not_recorded(self) -> dict[str, object]:
        if not self.unrecorded:
            return {}
        more = self.unrecorded - len(self.unrecorded_paths)
        return {"not_recorded_why": list(self.unrecorded_why)} | (
            {"not_recorded_more": more} if more > 0 else {}
        )


class FilesChanged(SessionEvent, kw_only=True, frozen=True, tag="files/changed"):
    """What a call changed in its root (`outside` False: `call` is the call's seq), or
    what changed outside any call before call `call` started (`outside` True)."""

    call: int | None = None
    outside: bool = False
    change: ChangeSummary = msgspec.field(default_factory=ChangeSummary)


class FilesUndone(SessionEvent, kw_only=True, frozen=True, tag="files/undone"):
    """Call `call`'s changes were reverted: what that changed, the first `listed_paths`
    paths left as they were (each with why) and how many more, and likewise those whose
    earlier state the store lacked (shown escaped; not put back). A log written before
    `unrecorded` was kept reads (); one written before the lists were bounded holds them
    whole and no count of more (0), so its counts are its lists' lengths."""

    call: int
    change: ChangeSummary = msgspec.field(default_factory=ChangeSummary)
    left: tuple[str, ...] = ()
    unrecorded: tuple[str, ...] = ()
    # How many there were beyond the lists: 0 (left out of the line) whenever they are
    # whole, so such an event's line is the same as before the lists were bounded.
    left_unlisted: int = 0
    unrecorded_unlisted: int = 0

    @property
    def left_count(self) -> int:
        return len(self.left) + self.left_unlisted

    @property
    def unrecorded_count(self) -> int:
        return len(self.unrecorded) + self.unrecorded_unlisted


class FilesRestored(SessionEvent, kw_only=True, frozen=True, tag="files/restored"):
    """The root was put back as it was before seq `before`: what that changed, the
    paths left as they were (each with why), and those not put back (both bounded and
    counted as `FilesUndone`'s)."""

    before: int
    change: ChangeSummary = msgspec.field(default_factory=ChangeSummary)
    left: tuple[str, ...] = ()
    unrecorded: tuple[str, ...] = ()
    left_unlisted: int = 0  # as FilesUndone's
    unrecorded_unlisted: int = 0

    @property
    def left_count(self) -> int:
        return len(self.left) + self.left_unlisted

    @property
    def unrecorded_count(self) -> int:
        return len(self.unrecorded) + self.unrecorded_unlisted


class HistoryStopped(SessionEvent, kw_only=True, frozen=True, tag="files/stopped"):
    """The undo history of `root` stopped for the rest of the harness's life (`reason`
    says why and what to do): no call there is recorded from then on, and an undo or a
    restore there is refused. `call`: the call whose window found it (its tool/call seq;
    None when an undo's did). Said once to each session that works there; no record."""

    root: str
    reason: str
    call: int | None = None


HISTORY_EVENTS = (FilesChanged, FilesUndone, FilesRestored, HistoryStopped)


@attrs.frozen
class UndoOutcome:
    """What an undo or a restore did: its event's seq, what it changed, what it left.
    Read from its event (`of`), so the harness's answer and a face reading the log
    later (a replay, a model's history) say the same."""

    __repr__ = fields_repr

    kind: Literal["undo", "restore"]
    target: int  # the call seq undone / the seq restored to before
    event_seq: int  # the seq of its files/undone or files/restored event
    created: int
    modified: int
    deleted: int
    paths: tuple[str, ...]  # up to the bound
    left: tuple[str, ...]  # "path: why" not done, up to the bound
    unrecorded: tuple[str, ...]  # paths left as they are (over the budget etc.), as `left`
    # How many were left in all, listed or not (made by hand: the lists' lengths).
    left_count: int = attrs.field(
        default=attrs.Factory(lambda self: len(self.left), takes_self=True)
    )
    unrecorded_count: int = attrs.field(
        default=attrs.Factory(lambda self: len(self.unrecorded), takes_self=True)
    )

    @classmethod
    def of(cls, event: FilesUndone | FilesRestored) -> UndoOutcome:
        """The outcome `event` (as the log stamped it) records."""
        kind: Literal["undo", "restore"]
        if isinstance(event, FilesUndone):
            kind, target = "undo", event.call
        else:
            kind, target = "restore", event.before
        change = event.change
        return cls(
            kind=kind,
            target=target,
            event_seq=event.seq,
            created=change.created,
            modified=change.modified,
            deleted=change.deleted,
            paths=(*change.created_paths, *change.modified_paths, *change.deleted_paths),
            left=event.left,
            unrecorded=event.unrecorded,
            left_count=event.left_count,
            unrecorded_count=event.unrecorded_count,
        )


@attrs.frozen
class RecordRef:
    """A record as the log holds it: its seq, kind, call, and its manifest's name."""

    __repr__ = fields_repr

    seq: int
    kind: RecordKind
    call: int | None
    manifest: str | None


def fold_history(events: Iterable[SessionEvent]) -> list[RecordRef]:
    """A session's records in log order, from its events (others are skipped)."""
    refs: list[RecordRef] = []
    for event in events:
        match event:
            case FilesChanged(call=call, outside=outside, change=change):
                kind: RecordKind = "outside" if outside else "call"
                refs.append(RecordRef(event.seq, kind, call, change.manifest))
            case FilesUndone(call=call, change=change):
                refs.append(RecordRef(event.seq, "undo", call, change.manifest))
            case FilesRestored(before=before, change=change):
                refs.append(RecordRef(event.seq, "restore", before, change.manifest))
    return refs
