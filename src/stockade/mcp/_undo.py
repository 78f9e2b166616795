"""The MCP `undo` tool (issue 42): its schema, its arguments, and the question it puts
to the person before it acts.

Undo is the person's: a call the model makes is asked first through the client
(elicitation), with every character of what would be put back escaped, unless the
composition's `stockade.mcp` entry sets `model_may_undo: true`. A client that
cannot ask gets a one-line refusal naming the command the person can run instead.

| client answer                     | what happens                 |
|-----------------------------------|------------------------------|
| accept, decision "undo"/"restore" | done                         |
| accept, decision "keep"           | nothing (declined)           |
| decline                           | nothing (declined)           |
| cancel, no valid decision         | nothing (dismissed)          |
| no form elicitation               | nothing (refused, one line)  |
| no answer in time, an error       | nothing (unanswered)         |

Pure: no I/O, no trio, no SDK.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from ..faces import counts
from ..reprs import fields_repr
from ..shown import one_line

TOOL: Final = "undo"
# The key of the one input request the undo question makes (2026-07-28 flow).
ASK_KEY: Final = "stockade_undo"
FIELD: Final = "decision"
KEEP: Final = "keep"

SCHEMA: Final[Mapping[str, Any]] = {
    "type": "object",
    "properties": {
        "call": {
            "type": "integer",
            "minimum": 1,
            "description": "undo this call: its seq, as the listing shows",
        },
        "to": {
            "type": "integer",
            "minimum": 1,
            "description": "restore the workspace to before this seq: every later change is "
            "reverted",
        },
    },
    "additionalProperties": False,
}

DESCRIPTION: Final = (
    "Put back what earlier calls of this session changed in the workspace. With no "
    "argument: list the calls that changed files (their seq, tool, counts, whether undone). "
    "`call`: undo that one call. `to`: restore the workspace to before that seq. Refused, "
    "touching nothing, when a later change would be overwritten. The person is asked "
    "first through the client unless the deployment allows the model to undo."
)

ANNOTATIONS: Final[Mapping[str, Any]] = {
    "title": "Undo a call's file changes (asks the person)",
    "readOnlyHint": False,
    "destructiveHint": True,
    "idempotentHint": False,
    "openWorldHint": False,
}


def tool() -> dict[str, Any]:
    """The MCP `Tool` (wire shape)."""
    return {
        "name": TOOL,
        "description": DESCRIPTION,
        "inputSchema": dict(SCHEMA),
        "annotations": dict(ANNOTATIONS),
    }


class BadArguments(ValueError):
    """The arguments name neither or both of `call` and `to` wrongly: one line."""


@attrs.frozen
class UndoArguments:
    """What the call asks: a list (both None), an undo (`call`) or a restore (`to`)."""

    __repr__ = fields_repr

    call: int | None = None
    to: int | None = None

    @property
    def lists(self) -> bool:
        return self.call is None and self.to is None

    @property
    def verb(self) -> str:
        return "undo" if self.call is not None else "restore"

    @property
    def target(self) -> int:
        target = self.call if self.call is not None else self.to
        assert target is not None
        return target


def parse(arguments: Any) -> UndoArguments:
    """The tool's arguments, checked: at most one of `call` and `to`, each a seq."""
    if arguments is None:
        return UndoArguments()
    if not isinstance(arguments, Mapping):
        raise BadArguments('undo takes an object: {} to list, {"call": N} or {"to": SEQ}')
    unknown = sorted(str(key) for key in arguments if key not in ("call", "to"))
    if unknown:
        raise BadArguments(
            f"undo takes `call` or `to`, not {', '.join(one_line(k) for k in unknown)}"
        )
    given = {key: arguments[key] for key in ("call", "to") if arguments.get(key) is not None}
    if len(given) > 1:
        raise BadArguments("undo takes `call` or `to`, not both: one undo or one restore")
    for key, value in given.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise BadArguments(f"`{key}` is a seq: a whole number, 1 or more")
    return UndoArguments(call=given.get("call"), to=given.get("to"))


def no_elicitation(session_id: str, arguments: UndoArguments) -> str:
    """The refusal for a client that cannot ask the person."""
    flag = f"--call {arguments.call}" if arguments.call is not None else f"--to {arguments.to}"
    return (
        f"not done: undo is the person's, and this MCP client cannot ask them; the person "
        f"can run `stockade session undo {session_id} {flag}` once this session is closed"
    )


def not_listed(arguments: UndoArguments) -> str:
    return (
        f"call {arguments.call} changed no file in this session (or is no call): nothing to "
        "undo; call undo with no argument to list the calls that did"
    )


def schema(arguments: UndoArguments) -> dict[str, Any]:
    """The form's `requestedSchema`: one field, "keep" by default."""
    act = arguments.verb
    return {
        "type": "object",
        "properties": {
            FIELD: {
                "type": "string",
                "title": "Decision",
                "description": f'"{act}": do it now. "{KEEP}": leave the workspace as it is.',
                "enum": [act, KEEP],
                "default": KEEP,
            }
        },
        "required": [FIELD],
    }


def message(arguments: UndoArguments, calls: Sequence[Any]) -> str:
    """What the person reads: what would be put back, from the session's calls."""
    if arguments.call is not None:
        row = next(call for call in calls if call.seq == arguments.call)
        rows = [
            f"stockade: the agent asks to undo call {row.seq}, putting back what it changed "
            "in the workspace.",
            f"  call {row.seq}: {one_line(row.tool)}: {one_line(row.summary, limit=500)}",
            f"  it {counts(row.created, row.modified, row.deleted)}",
        ]
    else:
        later = [call for call in calls if call.seq >= arguments.target and not call.undone]
        rows = [
            f"stockade: the agent asks to restore the workspace to before seq "
            f"{arguments.target}, reverting every change after it.",
            *(
                f"  call {call.seq}: {one_line(call.tool)}: {one_line(call.summary, limit=200)} "
                f"({counts(call.created, call.modified, call.deleted)})"
                for call in later
            ),
        ]
        if not later:
            rows.append("  (no call after it changed a file: only changes made outside calls)")
    rows.append(
        f'Choose "{arguments.verb}" to do it now, or "{KEEP}". A later change to the same '
        "files refuses it, touching nothing. Declining or dismissing the form does nothing."
    )
    return "\n".join(rows)


def accepted(action: str, content: Any, arguments: UndoArguments) -> str | None:
    """None when the person chose to act; else why nothing was done (one line)."""
    if action == "accept":
        value = content.get(FIELD) if isinstance(content, Mapping) else None
        if value == arguments.verb:
            return None
        if value == KEEP:
            return (
                f"not done: the person chose to keep the workspace as it is (no {arguments.verb})"
            )
        return "not done: the client submitted the form without a decision"
    if action == "decline":
        return f"not done: the person declined the {arguments.verb}"
    return f"not done: the person dismissed the {arguments.verb} question"
