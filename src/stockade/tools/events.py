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


TOOL_EVENTS = (ToolCalled, ToolResulted, NetworkConnected)
