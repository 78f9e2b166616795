"""Driving `stockade mcp` as a client would: a subprocess, the SDK's own client."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

ERAS = ("legacy", "auto")  # the initialize handshake, and 2026-07-28 (what `auto` picks)


def server_env(state_dir: Path) -> dict[str, str]:
    return {**os.environ, "STOCKADE_STATE_DIR": str(state_dir)}


def server_argv(root: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "stockade", "mcp", "--root", str(root), *extra]


@asynccontextmanager
async def connect(
    root: Path,
    state_dir: Path,
    *extra: str,
    mode: str = "auto",
    elicit: Any = None,
    stderr: Path | None = None,
) -> AsyncIterator[Client]:
    """`stockade mcp --root ROOT EXTRA...` under the SDK client (stderr to a file)."""
    argv = server_argv(root, *extra)
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=server_env(state_dir))
    errlog_path = stderr or state_dir / "server-stderr.txt"
    with open(errlog_path, "a", encoding="utf-8") as errlog:  # noqa: ASYNC230 - a local file
        transport = stdio_client(params, errlog=errlog)
        async with Client(transport, mode=mode, elicitation_callback=elicit) as client:
            yield client


def answering(action: str, decision: str | None = None, seen: list | None = None):
    """An elicitation callback that answers every question the same way."""

    async def callback(context: Any, params: Any) -> types.ElicitResult:
        if seen is not None:
            seen.append(params)
        content = {"decision": decision} if decision is not None else None
        return types.ElicitResult(action=action, content=content)

    return callback


def text(result: types.CallToolResult) -> str:
    assert len(result.content) == 1
    return result.content[0].text


def events(state_dir: Path, session_id: str) -> list[dict[str, Any]]:
    path = state_dir / f"{session_id}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def of_type(log: list[dict[str, Any]], tag: str) -> list[dict[str, Any]]:
    return [event for event in log if event["type"] == tag]


def session_id_from(instructions: str | None) -> str:
    found = re.search(r"stockade session: (\S+) ", instructions or "")
    assert found, instructions
    return found.group(1)


async def session_id(client: Client) -> str:
    status = await read_status(client)
    return status["session_id"]


async def read_status(client: Client) -> dict[str, Any]:
    result = await client.read_resource("stockade://session/status")
    return json.loads(result.contents[0].text)
