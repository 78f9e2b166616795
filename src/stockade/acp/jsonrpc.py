"""Checking one incoming JSON-RPC frame before the SDK sees it.

The SDK's reader drops a line that is not JSON without a word, and stops reading
altogether on a JSON value that is not an object. Each frame is therefore checked
here first: a frame that is not a JSON-RPC 2.0 request, notification or response is
answered with the JSON-RPC error the spec names (parse error -32700, invalid
request -32600), and the agent reads on. Everything well formed is passed on; the
SDK answers an unknown method (-32601) or bad params (-32602) itself.

Pure: bytes in, a message or an error response out.
"""

from __future__ import annotations

import json
from typing import Any, Final

import attrs

from ..reprs import fields_repr

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600


@attrs.frozen
class Frame:
    """A checked line: `message` to pass on, or `reply` to send back (or neither:
    a blank line, or a malformed response, which JSON-RPC never answers)."""

    __repr__ = fields_repr

    message: dict[str, Any] | None = None
    reply: dict[str, Any] | None = None


def error_response(request_id: Any, code: int, message: str, details: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": code, "message": message, "data": {"details": details}},
    }


def _valid_id(value: Any) -> bool:
    # JSON-RPC ids are strings, integers or null (no booleans, no fractions).
    return value is None or isinstance(value, str) or (type(value) is int)


def check_frame(line: bytes) -> Frame:
    """Check one newline-delimited frame."""
    text = line.strip()
    if not text:
        return Frame()
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as error:
        return Frame(reply=error_response(None, PARSE_ERROR, "Parse error", str(error)[:200]))
    if not isinstance(value, dict):
        kind = "a batch (an array)" if isinstance(value, list) else f"a JSON {type(value).__name__}"
        return Frame(
            reply=error_response(
                None, INVALID_REQUEST, "Invalid request", f"expected a JSON object, got {kind}"
            )
        )
    request_id = value.get("id") if _valid_id(value.get("id")) else None

    def invalid(details: str) -> Frame:
        return Frame(reply=error_response(request_id, INVALID_REQUEST, "Invalid request", details))

    if value.get("jsonrpc") != "2.0":
        return invalid('"jsonrpc" must be "2.0"')
    if "id" in value and not _valid_id(value["id"]):
        return invalid('"id" must be a string, an integer or null')
    if "method" in value:
        if not isinstance(value["method"], str) or not value["method"]:
            return invalid('"method" must be a non-empty string')
        params = value.get("params")
        if params is not None and not isinstance(params, dict | list):
            return invalid('"params" must be an object or an array')
        return Frame(message=value)
    if "id" in value and ("result" in value or "error" in value):
        return Frame(message=value)
    if "id" in value:
        # A response without a result or an error: answering a response is not
        # allowed, so it is dropped (the request it answers times out or is cancelled).
        return Frame()
    return invalid('a message needs a "method" (a request or notification) or an "id" (a response)')
