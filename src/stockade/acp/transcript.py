"""A session's log as the model's chat history and as the client's `session/update`s.

Pure folds over the session's events (no trio, no SDK): what the model is sent and
what `session/load` replays are both derived from the log alone, so a restarted
agent continues the conversation exactly where the log says it stands.

- `acp/prompt` -> a user message / a `user_message_chunk`
- `acp/reply` -> an assistant message / an `agent_message_chunk`
- `tool/call` -> an assistant tool call / a `tool_call`
- `tool/result` -> the tool message the model saw / a `tool_call_update`
- `context/policy` -> a system message, at the point the model was given it
  (not replayed to the client: it is the model's input, not the conversation)
- `files/undone`, `files/restored` (the person's `/undo`, `/restore`, or the CLI's
  `session undo`) -> a system message telling the model what changed under it (not
  replayed: the client was told by the command's answer, below, if at all)
- `acp/command` (the person's `/undo` or `/restore` and the agent's answer) -> not
  sent to the model / the person's `user_message_chunk` and the agent's answer
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ..approval import render
from ..events import SessionEvent
from ..faces import done_on_disk
from ..history import FilesRestored, FilesUndone, UndoOutcome
from ..policy import PolicyContext
from ..tools import ToolCalled, ToolResulted
from .events import CommandAnswered, PromptReceived, ReplyGiven
from .permission import tool_kind

INTERRUPTED: Final = (
    "[no result: the call was interrupted before it finished; nothing is known of its effects]"
)
TITLE_LIMIT: Final = 120
# How many paths of each kind an undo's note to the model names (then a count).
NOTE_PATHS: Final = 20


def prompt_text(blocks: Sequence[Mapping[str, Any]]) -> str:
    """A prompt's content blocks as one text: text as is, other blocks named."""
    parts: list[str] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "resource_link":
            parts.append(f"[resource: {block.get('uri')}]")
        elif kind == "resource":
            resource = block.get("resource") or {}
            text = resource.get("text") if isinstance(resource, Mapping) else None
            uri = resource.get("uri") if isinstance(resource, Mapping) else None
            parts.append(f"[resource: {uri}]" + (f"\n{text}" if isinstance(text, str) else ""))
        else:
            parts.append(f"[{kind} content not supported by this agent]")
    return "\n".join(parts)


def chat_messages(events: Sequence[SessionEvent], system: str) -> list[dict[str, Any]]:
    """The model's history in the chat-completions shape.

    Every tool call is followed by its result; a call the log holds no result for
    (the turn was cancelled while it ran) gets an explicit "interrupted" result, so
    the history is always well formed.
    """
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    open_calls: list[str] = []
    # A tool call's seq -> its id and title, so that an undo names the call the model made.
    called: dict[int, str] = {}

    def close_open() -> None:
        for call_id in open_calls:
            messages.append({"role": "tool", "tool_call_id": call_id, "content": INTERRUPTED})
        open_calls.clear()

    for event in events:
        match event:
            case PromptReceived(text=text):
                close_open()
                messages.append({"role": "user", "content": text})
            case ReplyGiven(text=text):
                close_open()
                messages.append({"role": "assistant", "content": text})
            case PolicyContext(text=text):
                close_open()
                messages.append({"role": "system", "content": text})
            case ToolCalled(call_id=call_id, name=name, arguments=arguments):
                close_open()
                open_calls.append(call_id)
                # JSON strings: the id and the command are the model's (or what it read).
                called[event.seq] = (
                    f"{json.dumps(call_id)}, {json.dumps(tool_title(name, arguments))}"
                )
                messages.append(
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": call_id,
                                "type": "function",
                                "function": {"name": name, "arguments": json.dumps(arguments)},
                            }
                        ],
                    }
                )
            case ToolResulted(call_id=call_id, text=text):
                if call_id in open_calls:
                    open_calls.remove(call_id)
                    messages.append({"role": "tool", "tool_call_id": call_id, "content": text})
            case FilesUndone() | FilesRestored():
                close_open()
                messages.append({"role": "system", "content": undo_note(event, called)})
            case _:
                pass
    close_open()
    return messages


def undo_note(event: FilesUndone | FilesRestored, called: Mapping[int, str]) -> str:
    """What the model is told of an undo or a restore the person made between its
    turns: what it reached back to (the tool call, when the model made it), what it did
    on disk, kind by kind, and that earlier results no longer say what the files hold.
    Whatever a command or the model chose (a file name, the call's id and title) is a
    JSON string here: data, never words of the note."""
    outcome = UndoOutcome.of(event)
    what = (
        f"undid call {outcome.target}"
        if outcome.kind == "undo"
        else f"restored the workspace to how it was before seq {outcome.target}"
    )
    which = called.get(outcome.target)
    named = "" if which is None else f" (seq {outcome.target} was your tool call {which})"
    change = event.change
    kinds = [
        f"{label} {_json_paths(found, total)}"
        for label, found, total in (
            # The undo's own change: what it deleted is what the call had created.
            ("removed:", change.deleted_paths, change.deleted),
            ("written back:", change.modified_paths, change.modified),
            ("made again:", change.created_paths, change.created),
            ("left as they were:", outcome.left, outcome.left_count),
            ("not recorded, so not put back:", outcome.unrecorded, outcome.unrecorded_count),
        )
        if total
    ]
    listed = f" Paths, as JSON strings: {'; '.join(kinds)}." if kinds else ""
    return (
        f"Between your turns the person {what}{named}: {done_on_disk(outcome)}."
        f"{listed} What earlier tool results showed of these files may no longer hold: "
        "read them again before relying on them."
    )


def _json_paths(paths: Sequence[str], total: int) -> str:
    """At most NOTE_PATHS of `paths` as a JSON list, and how many of `total` it leaves
    out (an event lists only the first of each kind; `total` is the count)."""
    shown = list(paths[:NOTE_PATHS])
    if not shown:
        return f"{total}, not named"
    more = total - len(shown)
    return json.dumps(shown) + (f" and {more} more" if more > 0 else "")


def tool_title(name: str, arguments: Any) -> str:
    """A one-line title for a tool call (escaped: a title is shown to a person)."""
    if isinstance(arguments, Mapping):
        for key in ("command", "path", "job_id"):
            value = arguments.get(key)
            if isinstance(value, str) and value:
                return f"{name}: {render.one_line(value, limit=TITLE_LIMIT)}"
    return name


def tool_call_start(call_id: str, name: str, arguments: Any, cwd: str | None) -> dict[str, Any]:
    """The `tool_call` update announcing a call before it runs."""
    update: dict[str, Any] = {
        "sessionUpdate": "tool_call",
        "toolCallId": call_id,
        "title": tool_title(name, arguments),
        "kind": tool_kind(name),
        "status": "in_progress",
        "rawInput": arguments,
    }
    if cwd is not None:
        update["locations"] = [{"path": cwd}]
    return update


def tool_call_done(
    call_id: str, text: str, *, is_error: bool, facts: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The `tool_call_update` carrying a call's result: the exact text the model saw."""
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "status": "failed" if is_error else "completed",
        "content": [{"type": "content", "content": {"type": "text", "text": text}}],
        "rawOutput": dict(facts or {}),
    }


def replay_updates(events: Sequence[SessionEvent], cwd: str | None) -> list[dict[str, Any]]:
    """What `session/load` streams to the client: the conversation, in log order."""
    updates: list[dict[str, Any]] = []
    open_calls: list[str] = []
    for event in events:
        match event:
            case PromptReceived(text=text):
                updates.append(
                    {
                        "sessionUpdate": "user_message_chunk",
                        "content": {"type": "text", "text": text},
                    }
                )
            case ReplyGiven(text=text):
                updates.append(
                    {
                        "sessionUpdate": "agent_message_chunk",
                        "content": {"type": "text", "text": text},
                    }
                )
            case ToolCalled(call_id=call_id, name=name, arguments=arguments):
                open_calls.append(call_id)
                updates.append(tool_call_start(call_id, name, arguments, cwd))
            case ToolResulted(call_id=call_id, text=text, is_error=is_error, facts=facts):
                if call_id in open_calls:
                    open_calls.remove(call_id)
                updates.append(tool_call_done(call_id, text, is_error=is_error, facts=facts))
            case CommandAnswered(text=text, answer=answer):
                # The person's own command and the agent's answer, as they were sent.
                updates.append(
                    {
                        "sessionUpdate": "user_message_chunk",
                        "content": {"type": "text", "text": text},
                    }
                )
                updates.append(
                    {
                        "sessionUpdate": "agent_message_chunk",
                        "content": {"type": "text", "text": answer},
                    }
                )
            case _:
                pass
    # A call cut off by a cancel or a crash has no result: the client is told so.
    updates += [
        tool_call_done(call_id, INTERRUPTED, is_error=True, facts=None) for call_id in open_calls
    ]
    return updates
