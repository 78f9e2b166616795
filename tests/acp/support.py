"""The editor's side of the ACP tests: the SDK's client over the agent's stdio.

`ScriptedClient` answers `session/request_permission` from a list and records every
question and update; `agent(...)` starts the example agent as a subprocess
(`python -m examples.acp_agent`, as an editor would) and connects the client.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections import defaultdict
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import acp
import stockade
from acp import schema

REPO = Path(__file__).resolve().parents[2]

# What the client does with a question: select an option, answer `cancelled`,
# send `session/cancel` and never answer, or never answer at all.
CANCELLED = "cancelled"
SESSION_CANCEL = "session-cancel"
SILENT = "silent"


class ScriptedClient:
    def __init__(self, answers: Sequence[str] = ()) -> None:
        self.answers = list(answers)
        self.asked: list[schema.RequestPermissionRequest] = []
        self.updates: dict[str, list[Any]] = defaultdict(list)
        self.conn: Any = None
        self.question_open = asyncio.Event()

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> schema.RequestPermissionResponse:
        self.asked.append(
            schema.RequestPermissionRequest(
                session_id=session_id, tool_call=tool_call, options=options
            )
        )
        self.question_open.set()
        answer = self.answers.pop(0) if self.answers else SILENT
        if answer == CANCELLED:
            return schema.RequestPermissionResponse(
                outcome=schema.DeniedOutcome(outcome="cancelled")
            )
        if answer == SESSION_CANCEL:
            await self.conn.cancel(session_id=session_id)
            await asyncio.Event().wait()  # the agent must not need our answer
        if answer == SILENT:
            await asyncio.Event().wait()
        return schema.RequestPermissionResponse(
            outcome=schema.AllowedOutcome(outcome="selected", option_id=answer)
        )

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates[session_id].append(update)

    def replies(self, session_id: str) -> list[str]:
        return [
            update.content.text
            for update in self.updates[session_id]
            if update.session_update == "agent_message_chunk"
        ]

    def tool_results(self, session_id: str) -> list[str]:
        return [
            update.content[0].content.text
            for update in self.updates[session_id]
            if update.session_update == "tool_call_update" and update.content
        ]


def write_script(
    directory: Path, turns: list[list[dict[str, Any]]], name: str = "script.json"
) -> str:
    path = directory / name
    path.write_text(json.dumps(turns), encoding="utf-8")
    return str(path)


def agent_env(state_dir: str) -> dict[str, str]:
    # The agent imports the same stockade as these tests (a checkout, an install).
    source = str(Path(stockade.__file__).resolve().parents[1])
    return {
        "PYTHONPATH": os.pathsep.join(filter(None, (source, os.environ.get("PYTHONPATH")))),
        "STOCKADE_STATE_DIR": state_dir,
        "STOCKADE_NO_PROBE_CACHE": "1",
        # Never a real model in the tests, whatever the host has set.
        "STOCKADE_ACP_API_KEY": "",
        "OPENAI_API_KEY": "",
    }


def agent_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "examples.acp_agent", *args]


@asynccontextmanager
async def agent(
    client: ScriptedClient,
    state_dir: str,
    *args: str,
    stderr_path: Path | None = None,
    env: dict[str, str] | None = None,
) -> AsyncIterator[tuple[Any, Any]]:
    """The example agent as a subprocess, the client connected; yields (conn, process).
    `env` adds to (or replaces) the agent's variables (`agent_env`)."""
    # Opened before the agent starts; nothing else runs in this loop yet.
    path = stderr_path if stderr_path is not None else os.devnull
    stderr = open(path, "ab")  # noqa: ASYNC230, SIM115
    try:
        command = agent_command(*args)
        async with acp.spawn_agent_process(
            client,
            command[0],
            *command[1:],
            env={**agent_env(state_dir), **(env or {})},
            cwd=str(REPO),
            transport_kwargs={"stderr": stderr, "shutdown_timeout": 10.0},
        ) as (conn, process):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            yield conn, process
    finally:
        stderr.close()


def log_events(state_dir: str, session_id: str) -> list[dict[str, Any]]:
    path = Path(state_dir) / f"{session_id}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def of_type(events: list[dict[str, Any]], *types: str) -> list[dict[str, Any]]:
    return [event for event in events if event["type"] in types]


def run(coroutine: Any, timeout: float = 120.0) -> Any:
    """Run an asyncio scenario from a (Trio-mode) synchronous test."""
    return asyncio.run(asyncio.wait_for(coroutine, timeout))
