"""`stockade mcp`'s process: stdout carries only protocol messages, stdin EOF ends the
session and its jobs, SIGTERM drains, and garbage on stdin is survived. Driven with
raw JSON-RPC lines (the handshake era) so every byte on stdout is seen."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import trio

from ..support import pids_with_marker
from .support import server_argv, server_env

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw-test", "version": "0"},
    },
}


class Raw:
    """A `stockade mcp` process spoken to line by line; every stdout line is checked."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.buffer = b""
        self.lines: list[dict[str, Any]] = []
        self.next_id = 1

    async def send(self, message: dict[str, Any] | str) -> None:
        line = message if isinstance(message, str) else json.dumps(message)
        await self.process.stdin.send_all(line.encode() + b"\n")

    async def call(self, name: str, arguments: dict[str, Any]) -> int:
        self.next_id += 1
        await self.send(
            {
                "jsonrpc": "2.0",
                "id": self.next_id,
                "method": "tools/call",
                "params": {"name": name, "arguments": arguments},
            }
        )
        return self.next_id

    async def response(self, request_id: int | None) -> dict[str, Any]:
        while True:
            for message in self.lines:
                if message.get("id") == request_id:
                    return message
            chunk = await self.process.stdout.receive_some(65536)
            assert chunk, "stdout closed before the response"
            self.buffer += chunk
            *complete, self.buffer = self.buffer.split(b"\n")
            for line in complete:
                message = json.loads(line)  # nothing but JSON-RPC on stdout
                assert message["jsonrpc"] == "2.0", line
                self.lines.append(message)

    async def rest_of_stdout(self) -> None:
        while chunk := await self.process.stdout.receive_some(65536):
            self.buffer += chunk
        for line in self.buffer.split(b"\n"):
            if line.strip():
                assert json.loads(line)["jsonrpc"] == "2.0", line


async def start(root: Path, state_dir: Path, stderr_path: Path, *extra: str) -> Raw:
    stderr = open(stderr_path, "ab")  # noqa: SIM115, ASYNC230 - handed to the child, closed here
    process = await trio.lowlevel.open_process(
        server_argv(root, *extra),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=server_env(state_dir),
    )
    stderr.close()
    raw = Raw(process)
    await raw.send(INITIALIZE)
    assert "result" in await raw.response(0)
    await raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return raw


def result_text(message: dict[str, Any]) -> str:
    return message["result"]["content"][0]["text"]


async def gone(marker: str) -> bool:
    with trio.move_on_after(10):
        while pids_with_marker(marker):
            await trio.sleep(0.05)
        return True
    return False


async def test_stdin_eof_closes_the_session_and_kills_its_jobs(root, state_dir):
    marker = f"mcp-eof-{uuid.uuid4().hex}"
    stderr = state_dir / "stderr.txt"
    raw = await start(root, state_dir, stderr)
    started = await raw.response(
        await raw.call("bash", {"command": f"sleep 300 # {marker}-bg", "background": True})
    )
    assert "started background job" in result_text(started)
    # A foreground command still running when the client leaves.
    await raw.call("bash", {"command": f"sleep 300 # {marker}-fg"})
    with trio.fail_after(10):
        while len(pids_with_marker(marker)) < 2:
            await trio.sleep(0.05)
    await raw.process.stdin.aclose()
    with trio.fail_after(20):
        await raw.rest_of_stdout()
        status = await raw.process.wait()
    assert status == 0
    assert await gone(marker), pids_with_marker(marker)
    assert "closed" in stderr.read_text()


async def test_sigterm_drains_running_calls_then_exits(root, state_dir):
    marker = f"mcp-term-{uuid.uuid4().hex}"
    stderr = state_dir / "stderr.txt"
    raw = await start(root, state_dir, stderr)
    await raw.response(
        await raw.call("bash", {"command": f"sleep 300 # {marker}", "background": True})
    )
    running = await raw.call("bash", {"command": "sleep 1; echo drained"})
    await trio.sleep(0.3)
    raw.process.send_signal(signal.SIGTERM)
    with trio.fail_after(20):
        finished = await raw.response(running)
        await raw.rest_of_stdout()
        status = await raw.process.wait()
    assert result_text(finished).startswith("drained\n")
    assert status == 128 + signal.SIGTERM  # as a shell reports it, after the drain
    assert await gone(marker)
    assert "SIGTERM: draining" in stderr.read_text()


async def test_garbage_on_stdin_is_survived(root, state_dir):
    raw = await start(root, state_dir, state_dir / "stderr.txt")
    await raw.send("this is not json")
    await raw.send('{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": "wrong"}')
    await raw.send({"jsonrpc": "2.0", "id": 8, "method": "no/such/method"})
    with trio.fail_after(20):
        bad = await raw.response(7)
        unknown = await raw.response(8)
        not_json = await raw.response(None)
        fine = await raw.response(await raw.call("bash", {"command": "echo alive"}))
    await raw.process.stdin.aclose()
    with trio.fail_after(20):
        await raw.rest_of_stdout()
        assert await raw.process.wait() == 0
    assert not_json["error"]["code"] == -32700
    assert bad["error"]["code"] == -32600
    assert unknown["error"]["code"] == -32601
    assert result_text(fine).startswith("alive\n")
    assert "not a JSON-RPC message" in (state_dir / "stderr.txt").read_text()


async def test_noise_from_the_server_process_never_reaches_stdout(root, state_dir):
    """Commands' output is captured; the process's own fd 1 points at stderr while
    serving, so nothing else can write into the protocol stream."""
    raw = await start(root, state_dir, state_dir / "stderr.txt")
    noisy = await raw.response(
        await raw.call(
            "bash", {"command": "echo to-stdout; echo to-stderr >&2; echo tty > /dev/stdout"}
        )
    )
    await raw.process.stdin.aclose()
    with trio.fail_after(20):
        await raw.rest_of_stdout()
        await raw.process.wait()
    assert "to-stdout" in result_text(noisy)
    # Every stdout line parsed as JSON-RPC (Raw asserts it) and no stray text.
    assert all("to-stdout" not in json.dumps(m) or "result" in m for m in raw.lines)


def test_ctrl_c_on_a_terminal_exits_130_after_the_drain(root, state_dir):
    """What `stockade mcp --help` says: Ctrl-C at the person's terminal stops the
    server with 130 (issue 22, item 6), the session closed first."""
    import sys
    from pathlib import Path

    from ..pty_screen import PtyChild

    stockade = str(Path(sys.executable).with_name("stockade"))
    argv = [stockade, "mcp", "--root", str(root)]
    env = {**os.environ, "STOCKADE_STATE_DIR": str(state_dir), "STOCKADE_CONFIG": ""}
    with PtyChild(argv, env=env) as child:
        child.wait_for(lambda text: "(new), root" in text, timeout=60)
        time.sleep(0.5)  # the drain handler listens right after that line
        child.send(b"\x03")
        status = child.finish(timeout=60)
        screen = child.text()
    assert status == 128 + signal.SIGINT, screen
    assert "Traceback" not in screen and "KeyboardInterrupt" not in screen
