"""An MCP client over HTTP, importable by the tests and runnable as its own process
(as the caller or as nobody): `python http_client.py URL ATTEMPTS_JSON` runs each
attempt against `stockade mcp --http` and prints one JSON line per attempt.

Only the MCP SDK and its dependencies: the tests copy those next to this file for
nobody, who may not read the checkout's virtualenv (a mode-700 home).
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

PROTOCOL = "2025-11-25"


def _authorization(token: str | None) -> dict[str, str]:
    return {} if token is None else {"Authorization": f"Bearer {token}"}


@asynccontextmanager
async def bearer(
    url: str,
    token: str | None,
    session_ids: list[str] | None = None,
    statuses: list[int] | None = None,
) -> AsyncIterator[Any]:
    """The SDK's streamable-HTTP transport sending `Authorization: Bearer TOKEN` (none
    when `token` is None); the MCP session ids the server hands out go to `session_ids`,
    the status of every answer to `statuses`."""
    async with create_mcp_http_client(headers=_authorization(token)) as http:
        if session_ids is not None:

            async def record(response: httpx2.Response) -> None:
                found = response.headers.get("mcp-session-id")
                if found and found not in session_ids:
                    session_ids.append(found)

            http.event_hooks["response"].append(record)
        if statuses is not None:

            async def note(response: httpx2.Response) -> None:
                statuses.append(response.status_code)

            http.event_hooks["response"].append(note)
        async with streamable_http_client(url, http_client=http) as streams:
            yield streams


async def approve(context: Any, params: Any) -> types.ElicitResult:
    """The elicitation callback of a client that answers its own escalations."""
    return types.ElicitResult(action="accept", content={"decision": "approve once"})


def _describe(error: BaseException) -> str:
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return f"{type(error).__name__}: {error}"


async def escalate(url: str, token: str | None, command: str) -> dict[str, Any]:
    """Open a session and run `command` as danger-full-access, approving it ourselves."""
    arguments = {
        "command": command,
        "sandbox_permissions": "danger-full-access",
        "justification": "the client approves its own request",
    }
    statuses: list[int] = []
    try:
        transport = bearer(url, token, statuses=statuses)
        async with Client(transport, elicitation_callback=approve) as client:
            result = await client.call_tool("bash", arguments)
    except Exception as error:
        return {"ok": False, "error": _describe(error), "statuses": statuses}
    return {"ok": True, "text": result.content[0].text, "statuses": statuses}


async def hijack(url: str, token: str | None, session_id: str, command: str) -> dict[str, Any]:
    """A raw `tools/call` sent into another client's MCP session (its `Mcp-Session-Id`)."""
    headers = {
        **_authorization(token),
        "Mcp-Session-Id": session_id,
        "MCP-Protocol-Version": PROTOCOL,
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "bash", "arguments": {"command": command}},
    }
    async with httpx2.AsyncClient(timeout=60) as http:
        response = await http.post(url, json=body, headers=headers)
    return {"ok": response.status_code < 400, "status": response.status_code, "body": response.text}


async def end(url: str, token: str | None, session_id: str) -> dict[str, Any]:
    """A raw DELETE of another client's MCP session (it would kill its jobs)."""
    headers = {
        **_authorization(token),
        "Mcp-Session-Id": session_id,
        "MCP-Protocol-Version": PROTOCOL,
    }
    async with httpx2.AsyncClient(timeout=60) as http:
        response = await http.delete(url, headers=headers)
    return {"ok": response.status_code < 400, "status": response.status_code, "body": response.text}


def read(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as file:
            return {"ok": True, "text": file.read()}
    except OSError as error:
        return {"ok": False, "error": f"{type(error).__name__}: {error.strerror}"}


async def attempt(url: str, spec: dict[str, Any]) -> dict[str, Any]:
    match spec["kind"]:
        case "escalate":
            return await escalate(url, spec.get("token"), spec["command"])
        case "hijack":
            return await hijack(url, spec.get("token"), spec["session"], spec["command"])
        case "end":
            return await end(url, spec.get("token"), spec["session"])
        case "read":
            return read(spec["path"])
    raise ValueError(spec)


async def main(url: str, specs: list[dict[str, Any]]) -> None:
    for spec in specs:
        print(json.dumps({**spec, "result": await attempt(url, spec)}), flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], json.loads(sys.argv[2]))
