"""Output the command wrote before it ended is never lost to a starved loop: once the
drain grace is over, what sits in the pipe is still taken, without waiting, and no
more than a pipe can hold (a process that escaped and keeps writing cannot hold the
call)."""

from __future__ import annotations

import os

import trio

from stockade.executor._buffer import OutputBuffer
from stockade.executor._spawn import _drain, _Grace


async def test_output_waiting_in_the_pipe_is_taken_after_the_grace():
    read_end, write_end = os.pipe()
    os.write(write_end, b"written before the command ended\n" * 100)
    # The write end stays open (a process that left the group holds it): no EOF.
    stream = trio.lowlevel.FdStream(read_end)
    buffer = OutputBuffer.with_cap(1 << 20)
    grace = _Grace()
    grace.deadline = trio.current_time() - 1  # the loop was starved past the grace
    try:
        with trio.fail_after(5):
            await _drain(stream, buffer, grace)
    finally:
        os.close(write_end)
        await stream.aclose()
    assert buffer.text() == "written before the command ended\n" * 100


async def test_what_is_taken_after_the_grace_is_bounded():
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    written = 0
    try:
        while True:
            written += os.write(write_end, b"y" * 4096)
    except BlockingIOError:
        pass
    stream = trio.lowlevel.FdStream(read_end)
    buffer = OutputBuffer.with_cap(1 << 20)
    grace = _Grace(leftover=10_000)
    grace.deadline = trio.current_time() - 1
    try:
        with trio.fail_after(5):
            await _drain(stream, buffer, grace)
    finally:
        os.close(write_end)
        await stream.aclose()
    assert written > 10_000 and len(buffer.text()) == 10_000
