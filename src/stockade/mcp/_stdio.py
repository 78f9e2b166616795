"""MCP over stdio on Trio: the process's fds 0 and 1 carry only protocol messages.

While serving, the wire runs on private duplicates of fds 0 and 1; fd 0 reads
/dev/null and fd 1 writes to stderr, so neither a stray print nor a child process
can read the client's messages or write into the stream (the SDK's `stdio_server`
does the same). Unlike the SDK's transport, reading is cancellable: a pipe or socket
is read through Trio's poller, anything else through a worker thread Trio may
abandon, so a drain on SIGTERM can stop reading without waiting for the client.
`serve_stdio` serves the Face on it: one connection, one session.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import stat
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types
import trio
from mcp.shared.message import SessionMessage

from ._link import open_link
from .server import DRAIN_SECONDS, say

if TYPE_CHECKING:
    from .server import Face

READ_CHUNK = 1 << 16


@contextlib.contextmanager
def claim_stdio() -> Iterator[tuple[int, int]]:
    """(wire_in, wire_out): private fds for the protocol; fd 0 -> /dev/null, fd 1 -> stderr."""
    sys.stdout.flush()
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    os.dup2(2, 1)
    try:
        yield wire_in, wire_out
    finally:
        sys.stdout.flush()
        with contextlib.suppress(OSError):
            os.dup2(wire_in, 0)
            os.dup2(wire_out, 1)
        os.close(wire_in)
        os.close(wire_out)


def _pollable(fd: int) -> bool:
    """A pipe or a socket (a terminal or a file is shared or unpollable: use a thread)."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class _Reader:
    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.stream = trio.lowlevel.FdStream(os.dup(fd)) if _pollable(fd) else None

    async def receive(self) -> bytes:
        if self.stream is not None:
            return await self.stream.receive_some(READ_CHUNK)
        return await trio.to_thread.run_sync(os.read, self.fd, READ_CHUNK, abandon_on_cancel=True)

    async def aclose(self) -> None:
        if self.stream is not None:
            await self.stream.aclose()


class _Writer:
    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.stream = trio.lowlevel.FdStream(os.dup(fd)) if _pollable(fd) else None

    async def send_all(self, data: bytes) -> None:
        if self.stream is not None:
            await self.stream.send_all(data)
            return

        def write() -> None:
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd, view) :]

        await trio.to_thread.run_sync(write)

    async def aclose(self) -> None:
        if self.stream is not None:
            await self.stream.aclose()


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except Exception as error:
        shown = line[:200].decode("utf-8", "replace")
        print(
            f"stockade mcp: dropped a line that is not a JSON-RPC message: {shown!r}",
            file=sys.stderr,
        )
        return error
    return SessionMessage(message)


def refusal(line: bytes) -> SessionMessage | None:
    """The JSON-RPC error a client gets for a line that is not a valid message: a
    parse error (id null) for text that is not JSON, an invalid request (with its
    id) for a request of the wrong shape; nothing for a broken response or
    notification (nobody waits for an answer to those)."""
    try:
        parsed = json.loads(line)
    except ValueError:
        code, message, request_id = mcp_types.PARSE_ERROR, "Parse error", None
    else:
        if not isinstance(parsed, dict) or "method" not in parsed or "id" not in parsed:
            return None
        request_id = parsed["id"]
        if isinstance(request_id, bool) or not isinstance(request_id, int | str):
            request_id = None
        code, message = mcp_types.INVALID_REQUEST, "Invalid request"
    error = mcp_types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=mcp_types.ErrorData(code=code, message=message)
    )
    return SessionMessage(error)


async def read_messages(fd: int, send: Any, reply: Any) -> None:
    """Parse newline-delimited JSON-RPC from `fd` into `send` until EOF (or cancelled);
    a line that is no valid message gets its JSON-RPC error on `reply` (closed here).

    Does not close `send`: the caller decides when the server sees the end (at once
    on EOF; after the drain on SIGTERM).
    """
    reader = _Reader(fd)
    buffer = bytearray()

    async def deliver(line: bytes) -> None:
        parsed = _parse(line)
        if isinstance(parsed, Exception):
            answer = refusal(line)
            if answer is not None:
                await reply.send(answer)
            return
        await send.send(parsed)

    try:
        async with reply:
            while True:
                chunk = await reader.receive()
                if not chunk:
                    break
                start = len(buffer)
                buffer += chunk
                newline = buffer.find(b"\n", start)
                while newline >= 0:
                    line = bytes(buffer[:newline])
                    del buffer[: newline + 1]
                    if line.strip():
                        await deliver(line)
                    newline = buffer.find(b"\n")
            if bytes(buffer).strip():
                await deliver(bytes(buffer))
    except (
        trio.BrokenResourceError,
        trio.ClosedResourceError,
        anyio.BrokenResourceError,
        anyio.ClosedResourceError,
        OSError,
    ):
        return
    finally:
        with trio.CancelScope(shield=True):
            await reader.aclose()


async def write_messages(fd: int, receive: Any, on_broken: Callable[[], None]) -> None:
    """Write each message from `receive` as one line on `fd`; a closed pipe calls
    `on_broken` (the client is gone) and stops."""
    writer = _Writer(fd)
    try:
        async with receive:
            async for message in receive:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await writer.send_all(data.encode("utf-8") + b"\n")
    except (
        trio.BrokenResourceError,
        trio.ClosedResourceError,
        anyio.BrokenResourceError,
        anyio.ClosedResourceError,
        OSError,
    ):
        on_broken()
    finally:
        with trio.CancelScope(shield=True):
            await writer.aclose()


def memory_streams() -> tuple[Any, Any]:
    """An anyio memory stream pair, as the SDK's server loop consumes them."""
    return anyio.create_memory_object_stream[Any](0)


async def serve_stdio(face: Face) -> None:
    """One connection on fds 0/1: EOF ends it at once; SIGTERM/SIGINT drain it first."""
    session = await face.open_agent_session(face.settings.session_id)
    async with open_link(session, face.calls) as link:
        face.stdio_link = link
        server = face.build_server(http=False)
        server.instructions = await face.instructions_for(link)
        options = server.create_initialization_options()
        draining = False
        with claim_stdio() as (wire_in, wire_out):
            read_send, read_receive = memory_streams()
            write_send, write_receive = memory_streams()
            reading = trio.CancelScope()

            async def pump() -> None:
                async with read_send:
                    with reading:
                        await read_messages(wire_in, read_send, write_send.clone())
                    if draining:
                        await link.drain(DRAIN_SECONDS)
                # Closed: the server sees the end of input and stops.

            async def on_signals(nursery: trio.Nursery) -> None:
                nonlocal draining
                with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as received:
                    async for signum in received:
                        if draining:
                            say("second signal: stopping now")
                            nursery.cancel_scope.cancel()
                            return
                        draining = True
                        face.stopped_by = signum
                        say(f"{signal.Signals(signum).name}: draining (up to {DRAIN_SECONDS:g} s)")
                        reading.cancel()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(on_signals, nursery)
                nursery.start_soon(pump)
                nursery.start_soon(write_messages, wire_out, write_receive, reading.cancel)
                await server.run(read_receive, write_send, options)
                nursery.cancel_scope.cancel()
        face.stdio_link = None
    say(f"session {session.id} closed")
