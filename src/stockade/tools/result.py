"""What a model-facing tool call returns: the exact text the model sees, facts beside it."""

from __future__ import annotations

from typing import Any

import msgspec


class ToolResult(msgspec.Struct, frozen=True):
    """`text` is exactly what the model is shown; `facts` are the structured results
    (exit code, denied, mode, backend, ...) for the host, never shown as such."""

    call_id: str
    name: str
    text: str
    is_error: bool = False
    facts: dict[str, Any] = {}
