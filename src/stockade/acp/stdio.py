"""The agent's stdio as an ACP message transport (asyncio, under trio-asyncio).

- stdout carries protocol frames only: the real fd 1 is kept for them, and fd 1 is
  pointed at stderr, so a stray print (ours, a library's) cannot corrupt the stream.
- stdin is read through the same kind of private duplicate, and fd 0 becomes
  /dev/null: nothing the agent starts can read the client's messages.
- every incoming line is checked (`jsonrpc.check_frame`); a malformed one is
  answered with a JSON-RPC error and reading goes on.
- end of input ends the transport (`receive()` returns None), which ends the
  connection and then the agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from typing import Any, Final

from .jsonrpc import INVALID_REQUEST, check_frame, error_response

# The longest frame read (the SDK's own default): a prompt may embed whole files.
LINE_LIMIT: Final = 50 * 1024 * 1024


class _PipeWriter(asyncio.Protocol):
    """Flow control for the protocol pipe: `drain()` waits while the pipe is full."""

    def __init__(self) -> None:
        self._paused = False
        self._waiters: list[asyncio.Future[None]] = []
        self.lost = False

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self._wake()

    def _wake(self) -> None:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()

    async def drain(self) -> None:
        while self._paused and not self.lost:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter
        if self.lost:
            raise ConnectionError("the client closed the agent's stdout")


class CheckedTransport:
    """An `acp` message Transport over newline-delimited JSON that answers bad frames."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        transport: asyncio.WriteTransport,
        writer: _PipeWriter,
    ) -> None:
        self._reader = reader
        self._transport = transport
        self._writer = writer
        self._lock = asyncio.Lock()

    async def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode("utf-8")
        async with self._lock:
            if self._writer.lost or self._transport.is_closing():
                raise ConnectionError("the client closed the agent's stdout")
            self._transport.write(data)
            await self._writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._read_line()
            if line is None:
                return None
            frame = check_frame(line)
            if frame.reply is not None:
                with contextlib.suppress(ConnectionError):
                    await self.send(frame.reply)
            if frame.message is not None:
                return frame.message

    async def _read_line(self) -> bytes | None:
        try:
            return await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as error:
            # End of input: a last line without a newline still counts.
            return error.partial if error.partial.strip() else None
        except asyncio.LimitOverrunError:
            await self._discard_line()
            with contextlib.suppress(ConnectionError):
                await self.send(
                    error_response(
                        None,
                        INVALID_REQUEST,
                        "Invalid request",
                        f"a frame longer than {LINE_LIMIT} bytes was discarded",
                    )
                )
            return b""

    async def _discard_line(self) -> None:
        while True:
            try:
                await self._reader.readuntil(b"\n")
                return
            except asyncio.LimitOverrunError as error:
                await self._reader.readexactly(error.consumed)
            except asyncio.IncompleteReadError:
                return

    async def close(self) -> None:
        self._transport.close()


async def open_stdio_transport(limit: int = LINE_LIMIT) -> CheckedTransport:
    """The process's stdio as a CheckedTransport (see the module docstring)."""
    loop = asyncio.get_running_loop()
    protocol_in = os.fdopen(os.dup(0), "rb", buffering=0)
    protocol_out = os.fdopen(os.dup(1), "wb", buffering=0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    reader = asyncio.StreamReader(limit=limit)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), protocol_in)
    transport, writer = await loop.connect_write_pipe(_PipeWriter, protocol_out)
    return CheckedTransport(reader, transport, writer)
