"""Draining a command's pipes (issue 39's fourth round read them directly, with fewer
trips through the event loop): a writer that never pauses cannot starve the loop or
its own time limit, and what a command wrote is captured whole, whether it exited at
once after writing or wrote while it was being killed."""

from __future__ import annotations

import itertools
import os
import shlex
import sys
import time

import pytest
import trio

from stockade.executor._buffer import OutputBuffer
from stockade.executor._spawn import _drain, _Grace
from stockade.executor.actor import open_executor
from stockade.executor.config import ExecutorConfig
from stockade.vocab import ExecutionPolicy, SandboxMode

from ..support import executor_on, pids_named

MIB = 1 << 20
# Writes a megabyte at a time into a pipe made a megabyte large, and never pauses.
FLOOD = shlex.join(
    [
        sys.executable,
        "-c",
        "import fcntl, os\n"
        "fcntl.fcntl(1, 1031, 1 << 20)  # F_SETPIPE_SZ\n"
        "block = bytes(1 << 20)\n"
        "while True: os.write(1, block)",
    ]
)


def unconfined(root) -> ExecutionPolicy:
    return ExecutionPolicy(mode=SandboxMode.DANGER_FULL_ACCESS, workspace_root=str(root))


def policy_for(backend: str | None, root) -> ExecutionPolicy:
    if backend is None:
        return unconfined(root)
    return ExecutionPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace_root=str(root))


async def test_a_writer_that_never_pauses_is_timed_out_while_the_loop_keeps_turning(tmp_path):
    # A writer that never pauses keeps the drain busy: the time limit and another
    # task still run (the test below makes every read find data, which a real writer
    # cannot promise).
    beats: list[float] = []

    async def heartbeat() -> None:
        while True:
            beats.append(trio.current_time())
            await trio.sleep(0.01)

    config = ExecutorConfig(kill_grace=0.2, output_cap=64 * 1024)
    async with open_executor(config) as executor:
        spec = executor.resolve(FLOOD, policy=unconfined(tmp_path), timeout=1.0)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(heartbeat)
            with trio.fail_after(30):
                started = trio.current_time()
                result = await executor.run(spec)
                ended = trio.current_time()
            nursery.cancel_scope.cancel()
    assert result.timed_out, result
    assert result.stdout.startswith("\0" * 1024)
    # Read all along: far more than the capture keeps went through the pipe.
    assert result.stdout_dropped > 4 * MIB, result.stdout_dropped
    during = [beat for beat in beats if started <= beat <= ended]
    # A beat every 10 ms asked for; many a second were had while the call ran.
    assert len(during) / (ended - started) >= 20, (len(during), ended - started)
    gaps = [later - earlier for earlier, later in itertools.pairwise(during)]
    assert max(gaps) < 1.0, max(gaps)


async def test_a_pipe_that_is_never_empty_still_lets_the_loop_turn():
    # /dev/zero has data for every read: a drain that took no schedule point after a
    # chunk would never give the loop back. The sink is a watchdog that never yields:
    # it fails the test (rather than hang it) when the heartbeat stops for 5 s.
    stream = trio.lowlevel.FdStream(os.open("/dev/zero", os.O_RDONLY))
    beats = 0
    seen = (time.monotonic(), beats)

    async def heartbeat() -> None:
        nonlocal beats
        while True:
            beats += 1
            await trio.sleep(0.01)

    async def watchdog(chunk: bytes) -> None:
        nonlocal seen
        if beats != seen[1]:
            seen = (time.monotonic(), beats)
        elif time.monotonic() - seen[0] > 5:
            raise AssertionError("the drain starved the event loop")

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(heartbeat)
            with trio.move_on_after(1.0) as limit:
                await _drain(stream, OutputBuffer.with_cap(1024), _Grace(), watchdog)
            nursery.cancel_scope.cancel()
    finally:
        stream.close()
    assert limit.cancelled_caught  # the deadline ended it: the loop kept turning
    assert beats >= 20, beats


@pytest.mark.parametrize("backend", [None, "landlock", "bwrap"])
async def test_output_written_just_before_exit_is_all_captured(tmp_path, backend):
    # More than a pipe holds, then a last write on each stream, then the exit at once.
    command = "head -c 300000 /dev/zero | tr '\\0' a; printf 'last-out'; printf 'last-err' >&2"
    config = ExecutorConfig(output_cap=4 * MIB)
    async with executor_on(backend, config) as executor:
        result = await executor.run(executor.resolve(command, policy=policy_for(backend, tmp_path)))
        quick = [
            await executor.run(
                executor.resolve(
                    f"printf 'out-{n}'; printf 'err-{n}' >&2", policy=policy_for(backend, tmp_path)
                )
            )
            for n in range(30)
        ]
    assert result.exit_code == 0, result
    assert result.stdout == "a" * 300000 + "last-out"
    assert result.stderr == "last-err"
    assert [(r.stdout, r.stderr) for r in quick] == [(f"out-{n}", f"err-{n}") for n in range(30)]


async def test_output_written_while_killed_by_the_timeout_is_captured(tmp_path):
    # The command's SIGTERM handler writes, then exits: that is captured too.
    name = f"stockade-drain-term-{os.getpid()}"
    command = (
        f"trap 'echo got-term; exit 3' TERM; echo started; "
        f"while :; do exec -a {name} sleep 0.05 & wait $!; done"
    )
    async with open_executor(ExecutorConfig(kill_grace=5.0)) as executor:
        result = await executor.run(
            executor.resolve(command, policy=unconfined(tmp_path), timeout=0.5)
        )
    assert result.timed_out, result
    assert result.stdout == "started\ngot-term\n"
    assert result.exit_code == 3
    assert pids_named(name) == []


async def test_a_writer_killed_mid_stream_leaves_every_line_it_wrote(tmp_path):
    # Each line is one write: what was captured is the lines written up to the kill,
    # in order, none missing and none cut.
    command = "i=0; while :; do echo line-$i; i=$((i+1)); done"
    config = ExecutorConfig(kill_grace=0.2, output_cap=64 * MIB)
    async with open_executor(config) as executor:
        result = await executor.run(
            executor.resolve(command, policy=unconfined(tmp_path), timeout=0.5)
        )
    assert result.timed_out and result.stdout_dropped == 0, result.stdout_dropped
    assert result.stdout.endswith("\n")
    lines = result.stdout.splitlines()
    assert len(lines) > 100
    assert lines == [f"line-{n}" for n in range(len(lines))]


async def test_what_sat_in_the_pipe_at_the_timeout_is_captured(tmp_path):
    # Written whole, then the command waits: it is killed with its output unread.
    config = ExecutorConfig(kill_grace=0.2, output_cap=4 * MIB)
    async with open_executor(config) as executor:
        result = await executor.run(
            executor.resolve("seq 1 20000; sleep 1000", policy=unconfined(tmp_path), timeout=0.5)
        )
    assert result.timed_out, result
    assert result.stdout == "".join(f"{n}\n" for n in range(1, 20001))


async def test_a_killed_background_job_keeps_what_it_wrote_while_dying(tmp_path):
    # Killed by a caller (its task cancelled): settle's teardown drains the pipes.
    ready = tmp_path / "ready"
    command = (
        f"trap 'echo got-term; exit 3' TERM; echo started; touch {ready}; "
        "while :; do sleep 0.05 & wait $!; done"
    )
    async with open_executor(ExecutorConfig(kill_grace=5.0)) as executor:
        handle = await executor.start(executor.resolve(command, policy=unconfined(tmp_path)))
        with trio.fail_after(20):
            while not ready.exists():
                await trio.sleep(0.01)
        report = await executor.kill(handle.id)
    assert report.state == "killed", report
    assert report.stdout == "started\ngot-term\n"
