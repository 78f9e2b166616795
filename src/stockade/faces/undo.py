"""Undo and restore as every face tells them (issue 42): a session's undoable calls as
rows, an outcome as one line, a refusal as one line, and the JSON shapes beside them.

The CLI (`stockade session undo`), the MCP `undo` tool and the ACP `/undo` and
`/restore` commands print exactly these, so a person reads the same words whichever
face they use. What a log holds (a call's summary, a path) was chosen by the model or
a command: shown escaped (`stockade.shown`). Pure: no I/O, no event loop; the values
are the harness's `UndoableCall`, `UndoOutcome` and `UndoRefused`, read by attribute.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Protocol

from ..shown import one_line

# How many paths an outcome line names of what it left (the JSON form names all the
# event lists: at most `listed_paths` of each, with the counts).
SHOWN_PATHS: Final = 5


class CallRow(Protocol):
    """What a row shows of a call (the harness's `UndoableCall`)."""

    @property
    def seq(self) -> int: ...
    @property
    def tool(self) -> str: ...
    @property
    def summary(self) -> str: ...
    @property
    def created(self) -> int: ...
    @property
    def modified(self) -> int: ...
    @property
    def deleted(self) -> int: ...
    @property
    def undone(self) -> bool: ...


class Outcome(Protocol):
    """What an undo or a restore did (the harness's `UndoOutcome`)."""

    @property
    def kind(self) -> str: ...
    @property
    def target(self) -> int: ...
    @property
    def event_seq(self) -> int: ...
    @property
    def created(self) -> int: ...
    @property
    def modified(self) -> int: ...
    @property
    def deleted(self) -> int: ...
    @property
    def paths(self) -> tuple[str, ...]: ...
    @property
    def left(self) -> tuple[str, ...]: ...
    @property
    def unrecorded(self) -> tuple[str, ...]: ...
    @property
    def left_count(self) -> int: ...
    @property
    def unrecorded_count(self) -> int: ...


class Refusal(Protocol):
    """Why an undo or a restore touched nothing (the harness's `UndoRefused`)."""

    @property
    def reason(self) -> str: ...
    @property
    def conflicts(self) -> tuple[str, ...]: ...
    @property
    def conflicting_calls(self) -> tuple[int, ...]: ...


def counts(created: int, modified: int, deleted: int) -> str:
    """`2 created, 1 modified, 0 deleted`: what a call changed."""
    return f"{created} created, {modified} modified, {deleted} deleted"


def calls_table(calls: Sequence[CallRow]) -> str:
    """One row per call, under a header; empty text when there is none."""
    if not calls:
        return ""
    header = ("CALL", "TOOL", "CREATED", "MODIFIED", "DELETED", "UNDONE", "SUMMARY")
    rows = [
        (
            str(call.seq),
            one_line(call.tool),
            str(call.created),
            str(call.modified),
            str(call.deleted),
            "yes" if call.undone else "no",
            one_line(call.summary, limit=120),
        )
        for call in calls
    ]
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in (header, *rows)
    ]
    return "\n".join(lines) + "\n"


def calls_lines(calls: Sequence[CallRow]) -> str:
    """One sentence-like line per call (a chat message has no columns)."""
    lines = []
    for call in calls:
        changed = counts(call.created, call.modified, call.deleted)
        undone = ", undone" if call.undone else ""
        lines.append(
            f"call {call.seq}: {one_line(call.tool)} ({changed}{undone}): "
            f"{one_line(call.summary, limit=120)}\n"
        )
    return "".join(lines)


def outcome_line(outcome: Outcome) -> str:
    """`undid call 7: 1 created removed, 2 modified put back, 1 deleted restored`, and
    what was left as it is; the counts are the undo's own changes on disk (it removes
    what the call created, writes back what it modified, makes again what it deleted)."""
    head = (
        f"undid call {outcome.target}"
        if outcome.kind == "undo"
        else f"restored to before seq {outcome.target}"
    )
    line = f"{head}: {done_on_disk(outcome)}"
    if outcome.left_count:
        line += f"; left as it is: {_some(outcome.left, outcome.left_count)}"
    if outcome.unrecorded_count:
        line += (
            "; not recorded, so not put back: "
            f"{_some(outcome.unrecorded, outcome.unrecorded_count)}"
        )
    return line


def done_on_disk(outcome: Outcome) -> str:
    """`2 created removed, 1 modified put back, 1 deleted restored`: the undo's own
    changes on disk, or that none was needed."""
    done = [
        f"{count} {what}"
        for count, what in (
            (outcome.deleted, "created removed"),
            (outcome.modified, "modified put back"),
            (outcome.created, "deleted restored"),
        )
        if count
    ]
    return ", ".join(done) if done else "nothing on disk needed changing"


def _some(paths: Sequence[str], total: int) -> str:
    """The first SHOWN_PATHS of `paths`, and how many more of `total` there were (the
    event lists only the first; `total` is its count)."""
    named = paths[:SHOWN_PATHS]
    if not named:
        return f"{total}, not named"
    shown = "; ".join(one_line(path, limit=200) for path in named)
    more = total - len(named)
    return shown + (f" (and {more} more)" if more > 0 else "")


def refusal_line(refusal: Refusal) -> str:
    """The refusal as one line: its reason and first conflict (`UndoRefused`'s own
    text), then every call in the way by its seq."""
    line = str(refusal)
    if refusal.conflicting_calls:
        seqs = ", ".join(str(seq) for seq in refusal.conflicting_calls)
        line += f"; in the way: seq {seqs}"
    return one_line(line, limit=2000)


def call_facts(call: CallRow) -> dict[str, Any]:
    return {
        "seq": call.seq,
        "tool": call.tool,
        "summary": call.summary,
        "created": call.created,
        "modified": call.modified,
        "deleted": call.deleted,
        "undone": call.undone,
    }


def outcome_facts(outcome: Outcome) -> dict[str, Any]:
    return {
        "kind": outcome.kind,
        "target": outcome.target,
        "event_seq": outcome.event_seq,
        "created": outcome.created,
        "modified": outcome.modified,
        "deleted": outcome.deleted,
        "paths": list(outcome.paths),
        "left": list(outcome.left),
        "unrecorded": list(outcome.unrecorded),
        # The lists hold at most `listed_paths` each; these count them all.
        "left_count": outcome.left_count,
        "unrecorded_count": outcome.unrecorded_count,
    }


def refusal_facts(refusal: Refusal) -> dict[str, Any]:
    return {
        "reason": refusal.reason,
        "conflicts": list(refusal.conflicts),
        "conflicting_calls": list(refusal.conflicting_calls),
    }
