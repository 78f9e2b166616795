"""SIGKILL a real appending process at random points; every acknowledged event survives."""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import trio

from stockade.sessionlog import JsonlStore, scan_log

from ._helpers import TEST_EVENTS, child_argv, child_env

ROUNDS = 20
PARALLEL = 4


async def kill_at_random(directory: Path, rng: random.Random) -> list[int]:
    """Run one appender, SIGKILL it at a random moment, return every seq it acknowledged."""
    process = await trio.lowlevel.open_process(
        child_argv("append", str(directory), "s", str(rng.randrange(1 << 30))),
        stdout=subprocess.PIPE,
        env=child_env(),
    )
    assert process.stdout is not None
    acked: list[int] = []
    buffer = b""
    ready = False
    target = rng.randrange(0, 40)
    delay = rng.choice((0.0, rng.uniform(0, 0.003)))
    with trio.fail_after(20):
        while not (ready and len(acked) >= target):
            chunk = await process.stdout.receive_some()
            assert chunk, f"the appender exited early ({await process.wait()})"
            *lines, buffer = (buffer + chunk).split(b"\n")
            for line in lines:
                if line == b"ready":
                    ready = True
                else:
                    acked.append(int(line))
        await trio.sleep(delay)
        process.kill()
        # Whatever it printed before dying was acknowledged too.
        while chunk := await process.stdout.receive_some():
            buffer += chunk
        acked += [int(line) for line in buffer.split(b"\n")[:-1]]
        assert await process.wait() == -9
    await process.stdout.aclose()
    return acked


async def test_sigkill_never_loses_an_acknowledged_event(tmp_path: Path) -> None:
    seed = int.from_bytes(os.urandom(4), "big")
    rng = random.Random(seed)
    limiter = trio.CapacityLimiter(PARALLEL)
    torn_rounds = 0
    checked = 0

    async def one_round(index: int) -> None:
        nonlocal torn_rounds, checked
        directory = tmp_path / f"round{index}"
        async with limiter:
            acked = await kill_at_random(directory, random.Random(rng.randrange(1 << 30)))
        store = JsonlStore(directory, registry=TEST_EVENTS)
        opened = store.open("s")  # the dead writer's lock is gone with it
        seqs = [event.seq for event in opened.events]
        assert seqs == list(range(1, len(seqs) + 1)), f"seed {seed} round {index}"
        assert set(acked) <= set(seqs), f"seed {seed} round {index}: lost {set(acked) - set(seqs)}"
        torn_rounds += opened.torn is not None
        path = directory / "s.jsonl"
        assert scan_log(path.read_bytes(), str(path), TEST_EVENTS).torn is None
        opened.handle.close()
        checked += 1

    async with trio.open_nursery() as nursery:
        for index in range(ROUNDS):
            nursery.start_soon(one_round, index)
    assert checked == ROUNDS
    print(f"seed {seed}: {torn_rounds}/{ROUNDS} rounds left a torn tail that was cut")
