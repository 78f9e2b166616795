"""The tool domain's session events: every model-facing call and its result."""

from __future__ import annotations

from typing import Any

from ..events import SessionEvent


class ToolCalled(SessionEvent, kw_only=True, frozen=True, tag="tool/call"):
    """A tool call as the model sent it (arguments verbatim)."""

    call_id: str
    name: str
    arguments: dict[str, Any]


class ToolResulted(SessionEvent, kw_only=True, frozen=True, tag="tool/result"):
    """What the model was shown for `call_id`, and the structured facts beside it."""

    call_id: str
    name: str
    text: str
    is_error: bool = False
    facts: dict[str, Any] = {}


class NetworkConnected(SessionEvent, kw_only=True, frozen=True, tag="network/connect"):
    """One connection the proxy decided for a call (network allowlist): the
    destination as asked, the address used (None: none was), the verdict and its rule."""

    call_id: str
    host: str
    port: int
    address: str | None = None
    allowed: bool
    rule: str | None = None
    reason: str
    protocol: str


class NetworkRequested(SessionEvent, kw_only=True, frozen=True, tag="network/request"):
    """One request to a ruled host the proxy judged for a call (network allowlist,
    issue 41), written before the request (or its refusal) went anywhere: the method,
    host, port, normalised path without its query, the verdict, its reason and rule,
    the names of the credentials put into it and the misplaced placeholders seen.
    `scrubbed` counts a credential's values the answer held, replaced before the
    command read them. Never a credential's value."""

    call_id: str
    method: str
    host: str
    port: int
    path: str
    allowed: bool
    reason: str
    rule: str | None = None
    credentials: tuple[str, ...] = ()
    misplaced: tuple[str, ...] = ()
    status: int | None = None
    protocol: str = "https"
    scrubbed: int = 0


TOOL_EVENTS = (ToolCalled, ToolResulted, NetworkConnected, NetworkRequested)
