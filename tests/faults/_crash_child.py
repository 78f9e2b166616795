"""Crash rounds for test_sessionlog_faults: fork an appender, SIGKILL it mid group commit.

_crash_child.py ROOT ROUNDS SEED

Paid for once: this process imports trio and stockade but never runs trio itself, so
it can fork cheaply. Each round forks a child that runs a fresh trio loop appending
from several tasks at once (so commits are groups) and writes every acknowledged seq
to a pipe. The parent kills it with SIGKILL after a random number of acknowledgements
(plus a random sub-millisecond delay, so the kill lands inside a write or an fsync)
and prints one JSON line per round: {"directory", "acked", "status"}. The test process
reopens each log and checks it.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time

import trio

from stockade.events import SessionEvent
from stockade.sessionlog import BUILTIN_EVENTS, JsonlStore, open_session_log

WRITERS = 6


class Filler(SessionEvent, kw_only=True, tag="test/filler"):
    n: int
    payload: str = ""


REGISTRY = BUILTIN_EVENTS.with_types(Filler)


def appender(directory: str, seed: int, out: int) -> None:
    rng = random.Random(seed)

    async def main() -> None:
        async with open_session_log(JsonlStore(directory, registry=REGISTRY)) as log:
            await log.open("s")
            os.write(out, b"ready\n")

            async def writer(k: int) -> None:
                while True:
                    size = rng.choice((0, 64, 4096, 65536, 300_000))
                    (event,) = await log.append("s", Filler(n=k, payload="x" * size))
                    os.write(out, f"{event.seq}\n".encode())

            async with trio.open_nursery() as nursery:
                for k in range(WRITERS):
                    nursery.start_soon(writer, k)

    trio.run(main)


def one_round(directory: str, rng: random.Random) -> dict[str, object]:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the appender: never returns
        try:
            os.close(read_end)
            appender(directory, rng.randrange(1 << 30), write_end)
        finally:
            os._exit(1)
    os.close(write_end)
    target = rng.randrange(0, 60)
    acked: list[int] = []
    ready = False
    buffer = b""
    deadline = time.monotonic() + 20
    with os.fdopen(read_end, "rb", buffering=0) as pipe:
        while not (ready and len(acked) >= target):
            if time.monotonic() > deadline:
                break
            chunk = pipe.read(65536)
            if not chunk:
                break
            *lines, buffer = (buffer + chunk).split(b"\n")
            for line in lines:
                if line == b"ready":
                    ready = True
                else:
                    acked.append(int(line))
        time.sleep(rng.choice((0.0, rng.uniform(0, 0.002))))
        os.kill(pid, signal.SIGKILL)
        # Whatever it reported before dying was acknowledged too.
        while chunk := pipe.read(65536):
            buffer += chunk
        acked += [int(line) for line in buffer.split(b"\n")[:-1] if line != b"ready"]
    _, status = os.waitpid(pid, 0)
    return {"directory": directory, "acked": acked, "status": status, "ready": ready}


def main() -> None:
    root, rounds, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed)
    for index in range(rounds):
        directory = os.path.join(root, f"round{index}")
        print(json.dumps(one_round(directory, rng)), flush=True)


if __name__ == "__main__":
    main()
