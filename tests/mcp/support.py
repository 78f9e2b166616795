"""Driving `stockade mcp` as a client would: a subprocess, the SDK's own client."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp_types as types
import trio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from .http_client import bearer

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


# --- over HTTP ----------------------------------------------------------------------

SERVING = re.compile(
    rb"at (http://\S+/mcp) \((?:bearer token in (\S+)|bearer tokens from (\S+))\)\n"
)


@dataclass
class HttpServer:
    """A running `stockade mcp --http`: its URL, the token file it named, and (after
    the block) its stderr, exit status and stdout."""

    url: str
    token_file: Path
    generated: bool
    out: list = field(default_factory=list)

    @property
    def token(self) -> str:
        """The first token of the file (the one a generated file holds)."""
        lines = (line.strip() for line in self.token_file.read_text().splitlines())
        return next(line for line in lines if line and not line.startswith("#"))

    def client(
        self, token: str | None = None, session_ids: list[str] | None = None, **options: Any
    ) -> Client:
        """The SDK's client, sending `token` (default: the server's); the MCP session
        ids it is given go to `session_ids`."""
        token = self.token if token is None else token
        return Client(bearer(self.url, token, session_ids), **options)


@asynccontextmanager
async def http_server(root: Path, state_dir: Path, *extra: str) -> AsyncIterator[HttpServer]:
    process = await trio.lowlevel.open_process(
        server_argv(root, "--http", "127.0.0.1:0", *extra),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(state_dir),
    )
    received = b""
    server = None
    try:
        with trio.fail_after(60):
            while (found := SERVING.search(received)) is None:
                chunk = await process.stderr.receive_some(4096)
                assert chunk, received.decode()
                received += chunk
        url, made, given = found.groups()
        server = HttpServer(url.decode(), Path((made or given).decode()), made is not None)
        yield server
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        with trio.fail_after(30):
            while chunk := await process.stderr.receive_some(4096):
                received += chunk
            status = await process.wait()
        stdout = await process.stdout.receive_some(65536)
        if server is not None:
            server.out += [received.decode(), status, stdout]


def session_logs(state_dir: Path) -> list[str]:
    return sorted(path.name for path in state_dir.glob("*.jsonl"))
