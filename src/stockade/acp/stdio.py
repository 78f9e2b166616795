"""The agent's stdio as an ACP message transport (asyncio, under trio-asyncio).

- stdout carries protocol frames only: the real fd 1 is kept for them, and fd 1 is
  pointed at stderr, so a stray print (ours, a library's) cannot corrupt the stream.
- stdin is read through the same kind of private duplicate, and fd 0 becomes
  /dev/null: nothing the agent starts can read the client's messages.
- every incoming line is checked (`jsonrpc.check_frame`); a malformed one is
  answered with a JSON-RPC error and reading goes on.
- end of input ends the transport (`receive()` returns None), which ends the
  connection and then the agent.
- a pipe, a socket or a terminal is watched by the event loop; anything it cannot
  watch (a regular file, `/dev/null`) is still a stream: stdin is read in a worker
  thread and its end is the end of input, as a pipe's would be; replies are written
  straight to a stdout file (docs/acp.md, "Stdio").
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import selectors
import stat
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


class _FileWriteTransport(asyncio.WriteTransport):
    """Writes to a descriptor the event loop cannot watch (a regular file, /dev/null):
    each write goes straight to it, as a file takes it at once."""

    def __init__(self, handle: Any, writer: _PipeWriter) -> None:
        super().__init__()
        self._handle = handle
        self._writer = writer
        self._closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[self._handle.write(view) :]
        except OSError:
            self._writer.connection_lost(None)

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        if not self._closing:
            self._closing = True
            self._handle.close()


def watchable(fd: int) -> bool:
    """Whether the event loop can watch `fd`: a pipe or a socket, or a character
    device its selector accepts (a terminal; not /dev/null)."""
    mode = os.fstat(fd).st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return True
    if not stat.S_ISCHR(mode):
        return False
    with selectors.DefaultSelector() as selector:
        try:
            selector.register(fd, selectors.EVENT_READ)
        except OSError:
            return False
    return True


async def _read_in_thread(handle: Any, reader: asyncio.StreamReader) -> None:
    """Feed `reader` from a descriptor the loop cannot watch, to its end."""
    loop = asyncio.get_running_loop()
    try:
        while chunk := await loop.run_in_executor(None, handle.read, 65536):
            reader.feed_data(chunk)
    except OSError:
        pass
    finally:
        reader.feed_eof()
        handle.close()


async def open_stdio_transport(limit: int = LINE_LIMIT) -> CheckedTransport:
    """The process's stdio as a CheckedTransport (see the module docstring)."""
    loop = asyncio.get_running_loop()
    read_watched, write_watched = watchable(0), watchable(1)
    protocol_in = os.fdopen(os.dup(0), "rb", buffering=0)
    protocol_out = os.fdopen(os.dup(1), "wb", buffering=0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    reader = asyncio.StreamReader(limit=limit)
    if read_watched:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), protocol_in)
    else:
        _READERS.add(task := loop.create_task(_read_in_thread(protocol_in, reader)))
        task.add_done_callback(_READERS.discard)
    transport: asyncio.WriteTransport
    if write_watched:
        transport, writer = await loop.connect_write_pipe(_PipeWriter, protocol_out)
    else:
        writer = _PipeWriter()
        transport = _FileWriteTransport(protocol_out, writer)
    return CheckedTransport(reader, transport, writer)


# The thread-fed readers' tasks, held so that none is collected while it runs.
_READERS: set[asyncio.Task[None]] = set()
