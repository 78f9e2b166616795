"""The agent's slash commands for the person (issue 42): `/undo` lists the calls that
changed files, `/undo N` undoes call N, `/restore SEQ` restores the workspace to
before seq SEQ.

They are the person's, typed in the editor's prompt box: the agent handles them
itself and answers with a message; they never reach the model, and the model has no
tool for them. The editor learns them from `available_commands_update`. A prompt is
a command only when its whole text is one (`/undo 7`); any other text that starts
with `/` is the model's as before. Pure: no trio, no SDK.
"""

from __future__ import annotations

import re
from typing import Any, Final

import attrs

from ..reprs import fields_repr

UNDO: Final = "undo"
RESTORE: Final = "restore"

_COMMAND = re.compile(r"\A\s*/(undo|restore)(?:[ \t]+(\S+))?[ \t]*\Z")


def available_commands() -> list[dict[str, Any]]:
    """The `available_commands_update` list (ACP `AvailableCommand`, wire shape)."""
    return [
        {
            "name": UNDO,
            "description": "list the calls that changed files; with N, undo call N "
            "(put back what it changed)",
            "input": {"hint": "the call's seq (none: list them)"},
        },
        {
            "name": RESTORE,
            "description": "restore the workspace to before seq SEQ (every later change reverted)",
            "input": {"hint": "the seq to restore to before"},
        },
    ]


def commands_update() -> dict[str, Any]:
    return {"sessionUpdate": "available_commands_update", "availableCommands": available_commands()}


@attrs.frozen
class Command:
    """A prompt that is one of the commands: `undo` with `target` None lists."""

    __repr__ = fields_repr

    name: str
    target: int | None = None


class Unusable(ValueError):
    """A command typed wrongly: one line saying how to type it."""


def parse_command(text: str) -> Command | None:
    """The command the prompt's whole text is, None when it is none (it goes to the
    model); Unusable for `/restore` without a seq or a word that is not one."""
    found = _COMMAND.match(text)
    if found is None:
        return None
    name, word = found.group(1), found.group(2)
    if word is None:
        if name == RESTORE:
            raise Unusable("/restore takes a seq: /restore SEQ (see /undo for the calls' seqs)")
        return Command(name)
    if not (word.isascii() and word.isdigit()) or int(word) < 1:
        shown = word if len(word) <= 40 else word[:40] + "..."
        raise Unusable(
            f"/{name} takes a seq, a whole number 1 or more, not {shown!r} "
            "(/undo alone lists the calls)"
        )
    return Command(name, int(word))
