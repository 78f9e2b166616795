"""Two "hosts" (separate processes) on one database: a session moves between them, one
writer at a time, and a SIGKILLed writer frees its sessions and loses nothing it
acknowledged."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import trio

from stockade.sandbox.private_tmp import PREFIX, default_parent
from stockade.sessionlog import SessionLocked
from stockade.sessionlog.stores.postgres import PostgresStore

from ..sessionlog._helpers import TEST_EVENTS
from .fixtures import fresh_database

HOST = Path(__file__).with_name("_host.py")
REPO = str(HOST.parent.parent.parent)
# How long a SIGKILLed host may keep its sessions: on a Unix socket the server sees
# the connection close at once; the bound leaves room for a loaded CI machine.
FREED_WITHIN = 10.0
ROUNDS = 20
PARALLEL = 4


@pytest.fixture
def db(pg_dsn: str) -> str:
    return fresh_database(pg_dsn)


def host_env(dsn: str) -> dict[str, str]:
    env = dict(os.environ)
    env["STOCKADE_TEST_PG_DSN"] = dsn
    env["PYTHONPATH"] = os.pathsep.join([REPO, env.get("PYTHONPATH", "")])
    return env


def run_host(dsn: str, *args: str) -> tuple[int, dict[str, str]]:
    done = subprocess.run(
        [sys.executable, str(HOST), *args],
        env=host_env(dsn),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout.splitlines()[-1])


def start_holder(dsn: str, *args: str) -> tuple[subprocess.Popen[str], dict[str, str]]:
    holder = subprocess.Popen(
        [sys.executable, str(HOST), *args, "--hold"],
        env=host_env(dsn),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    line = holder.stdout.readline()
    assert line, holder.stderr.read() if holder.stderr else ""
    return holder, json.loads(line)


def test_a_session_resumes_on_another_host_with_its_modes(db: str, scratch: str) -> None:
    status, on_a = run_host(
        db, "open", "moving", scratch, "--mode", "read-only", "--approval", "never"
    )
    assert status == 0 and on_a["mode"] == "read-only" and on_a["approval"] == "never"
    status, on_b = run_host(db, "open", "moving", scratch)  # host B, after A exited
    assert status == 0
    assert (on_b["mode"], on_b["approval"]) == ("read-only", "never")
    assert on_b["events"] == on_a["events"]  # resumed, not re-created


def test_a_held_session_is_locked_elsewhere_and_a_kill_9_frees_it(db: str, scratch: str) -> None:
    holder, _state = start_holder(db, "open", "held", scratch, "--mode", "read-only")
    try:
        status, refused = run_host(db, "open", "held", scratch)
        assert status == 3
        assert "already open for writing by" in refused["locked"]
        assert f"pid {holder.pid}" in refused["locked"]  # who holds it
        holder.kill()
        killed = time.monotonic()
        assert holder.wait(10) == -9
        with PostgresStore(db, pool_size=1) as other:
            while True:
                try:
                    opened = other.open("held")
                    break
                except SessionLocked:
                    assert time.monotonic() - killed < FREED_WITHIN, "the lock outlived its host"
                    time.sleep(0.05)
            freed = time.monotonic() - killed
            opened.handle.close()
        print(f"session freed {freed * 1000:.0f} ms after kill -9")
        status, on_b = run_host(db, "open", "held", scratch)
        assert status == 0 and on_b["mode"] == "read-only"
    finally:
        if holder.poll() is None:
            holder.kill()
        holder.wait()
        for stream in (holder.stdin, holder.stdout, holder.stderr):
            if stream is not None:
                stream.close()
        # A host killed with SIGKILL cannot remove its session's private temp directory.
        shutil.rmtree(os.path.join(default_parent(), f"{PREFIX}held"), ignore_errors=True)


async def kill_at_random(dsn: str, session_id: str, rng: random.Random) -> list[int]:
    """One appending host, SIGKILLed at a random moment; every seq it acknowledged."""
    process = await trio.lowlevel.open_process(
        [sys.executable, str(HOST), "append", session_id, str(rng.randrange(1 << 30))],
        stdout=subprocess.PIPE,
        env=host_env(dsn),
    )
    assert process.stdout is not None
    acked: list[int] = []
    buffer = b""
    ready = False
    target = rng.randrange(0, 60)
    delay = rng.choice((0.0, rng.uniform(0, 0.005)))
    with trio.fail_after(30):
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
        while chunk := await process.stdout.receive_some():
            buffer += chunk
        acked += [int(line) for line in buffer.split(b"\n")[:-1] if line != b"ready"]
        assert await process.wait() == -9
    await process.stdout.aclose()
    return acked


async def test_twenty_kill_9s_lose_no_acknowledged_event(db: str) -> None:
    seed = int.from_bytes(os.urandom(4), "big")
    rng = random.Random(seed)
    limiter = trio.CapacityLimiter(PARALLEL)
    checked = 0
    reader = PostgresStore(db, registry=TEST_EVENTS, pool_size=2, owner="the checker")

    async def one_round(index: int) -> None:
        nonlocal checked
        session_id = f"round-{index % 5}"  # each session is killed in four rounds
        async with limiter:
            acked = await kill_at_random(db, session_id, random.Random(rng.randrange(1 << 30)))
            with trio.fail_after(FREED_WITHIN):
                while True:
                    try:
                        opened = await trio.to_thread.run_sync(reader.open, session_id)
                        break
                    except SessionLocked:
                        await trio.sleep(0.05)
            seqs = [event.seq for event in opened.events]
            await trio.to_thread.run_sync(opened.handle.close)
        where = f"seed {seed} round {index}"
        assert seqs == list(range(1, len(seqs) + 1)), f"{where}: a seq skipped or repeated"
        assert len(acked) == len(set(acked)), f"{where}: a seq acknowledged twice"
        assert set(acked) <= set(seqs), f"{where}: lost {sorted(set(acked) - set(seqs))}"
        checked += 1

    try:
        # Rounds on one session run one after another (a session has one writer).
        for start in range(0, ROUNDS, 5):
            async with trio.open_nursery() as nursery:
                for index in range(start, min(start + 5, ROUNDS)):
                    nursery.start_soon(one_round, index)
    finally:
        reader.close()
    assert checked == ROUNDS
