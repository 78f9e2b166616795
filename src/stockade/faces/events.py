"""The events faces write into a session log beside the harness's: the ACP face's
conversation around the tool calls (`FACE_EVENTS`: every type a shipped face writes,
so `stockade session` decodes any face's log).

The harness already logs every tool call and result (`tool/call`, `tool/result`), the
policy-context messages (`context/policy`) and the approval audit pair. What only
the face sees is the person's prompt and the model's text replies; with these two
events a session's whole exchange reconstructs from its log (the model's history
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


ACP_EVENTS: tuple[type[SessionEvent], ...] = (PromptReceived, ReplyGiven)

# Every event type the shipped faces write (the log decodes with these and the harness's).
FACE_EVENTS: tuple[type[SessionEvent], ...] = ACP_EVENTS
