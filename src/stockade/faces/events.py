"""The events faces write into a session log beside the harness's: the ACP face's
conversation around the tool calls (`FACE_EVENTS`: every type a shipped face writes,
so `stockade session` decodes any face's log).

The harness already logs every tool call and result (`tool/call`, `tool/result`), the
policy-context messages (`context/policy`) and the approval audit pair. What only
the face sees is the person's prompt, the model's text replies and the agent's answers
to the person's own commands; with these events a session's whole exchange
reconstructs from its log (the model's history
and the ACP `session/load` replay, `acp/transcript.py`).
"""

from __future__ import annotations

from ..events import SessionEvent


class PromptReceived(SessionEvent, kw_only=True, frozen=True, tag="acp/prompt"):
    """A `session/prompt` from the client, its content blocks flattened to text."""

    text: str


class ReplyGiven(SessionEvent, kw_only=True, frozen=True, tag="acp/reply"):
    """Text the model answered with (streamed to the client as an agent message)."""

    text: str


class CommandAnswered(SessionEvent, kw_only=True, frozen=True, tag="acp/command"):
    """A prompt that was one of the agent's own commands (`/undo`, `/restore`), as
    typed, and the agent's one-message answer: replayed to the client as the exchange
    it was, never given to the model (an undo's effect reaches the model through its
    `files/undone` or `files/restored` event)."""

    text: str
    answer: str


ACP_EVENTS: tuple[type[SessionEvent], ...] = (PromptReceived, ReplyGiven, CommandAnswered)

# Every event type the shipped faces write (the log decodes with these and the harness's).
FACE_EVENTS: tuple[type[SessionEvent], ...] = ACP_EVENTS
