"""The session log when the disk fails: ENOSPC and EIO on append, and SIGKILL mid commit.

Each fault must give the caller a clear error (`LogWriteFailed`, naming the cause),
leave a log that scans clean, and lose nothing that was acknowledged. Faults are
injected three ways: through the store's injectable `fsync`, through the store
interface (a store whose handle fails mid write), and for real, on a tiny tmpfs.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from stockade import open_harness
from stockade.events import SessionEvent
from stockade.sessionlog import (
    JsonlStore,
    LogWriteFailed,
    OpenedLog,
    open_session_log,
    scan_log,
)
from stockade.tools.events import ToolCalled

from ._crash_child import REGISTRY
from ._support import composition, python_env, tiny_tmpfs

CRASH_CHILD = Path(__file__).with_name("_crash_child.py")
ROUNDS = 50


def note(n: int, size: int = 0) -> ToolCalled:
    return ToolCalled(call_id=f"c{n}", name="note", arguments={"n": n, "pad": "x" * size})


def registry():
    from stockade.harness import harness_registry

    return harness_registry()


def scan_file(path: Path) -> tuple[SessionEvent, ...]:
    scan = scan_log(path.read_bytes(), str(path), registry())
    assert scan.torn is None, f"{path} has a torn tail: {scan.torn}"
    return scan.events


def fill(path: Path) -> None:
    """Write zeros to `path` until the filesystem is full."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as error:
        assert error.errno == errno.ENOSPC
    finally:
        os.close(fd)


class FailingFsync:
    """An injectable fsync that fails with `error` while armed."""

    def __init__(self) -> None:
        self.error: int | None = None

    def __call__(self, fd: int) -> None:
        if self.error is not None:
            raise OSError(self.error, os.strerror(self.error))
        os.fsync(fd)


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO])
async def test_a_failing_fsync_fails_the_append_and_keeps_the_log(tmp_path, code):
    fsync = FailingFsync()
    store = JsonlStore(tmp_path, registry=registry(), fsync=fsync)
    async with open_session_log(store) as log:
        await log.open("s")
        acked = [(await log.append("s", note(n)))[0].seq for n in range(5)]
        fsync.error = code
        with pytest.raises(LogWriteFailed) as caught:
            await log.append("s", note(99, 1000))
        # Clear: the session, the cause and what to do.
        assert "'s'" in str(caught.value) and "Close it and open it again" in str(caught.value)
        assert isinstance(caught.value.__cause__, OSError)
        assert caught.value.__cause__.errno == code
        fsync.error = None
        # The session refuses further appends until it is reopened: what reached the
        # disk is unknown to it.
        with pytest.raises(LogWriteFailed):
            await log.append("s", note(100))
        await log.close("s")
        reopened = await log.open("s")
        assert [event.seq for event in reopened.events] == acked
        (after,) = await log.append("s", note(101))
        assert after.seq == acked[-1] + 1
    events = scan_file(tmp_path / "s.jsonl")
    assert [event.call_id for event in events] == ["c0", "c1", "c2", "c3", "c4", "c101"]


@attrs.define
class FaultyStore:
    """A SessionStore wrapping the real one; its handles fail on demand.

    `mode` "before": the append fails before writing anything; "torn": it writes half
    of its bytes straight to the file and fails (a store that could not clean up).
    """

    inner: JsonlStore
    mode: str | None = None
    code: int = errno.EIO

    @property
    def registry(self):
        return self.inner.registry

    def open(self, session_id: str) -> OpenedLog:
        opened = self.inner.open(session_id)
        return attrs.evolve(opened, handle=_FaultyHandle(self, opened.handle))


@attrs.define
class _FaultyHandle:
    store: FaultyStore
    inner: Any

    def append(self, events: Sequence[SessionEvent]) -> None:
        if self.store.mode == "before":
            raise OSError(self.store.code, os.strerror(self.store.code))
        if self.store.mode == "torn":
            payload = self.store.registry.encode_lines(events)
            os.write(self.inner.fd, payload[: max(1, len(payload) // 2 + 7)])
            raise OSError(self.store.code, os.strerror(self.store.code))
        self.inner.append(events)

    def close(self) -> None:
        self.inner.close()


@pytest.mark.parametrize("mode", ["before", "torn"])
@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO])
async def test_a_store_that_fails_mid_write_loses_nothing_acknowledged(tmp_path, mode, code):
    store = FaultyStore(JsonlStore(tmp_path, registry=registry()), code=code)
    async with open_session_log(store) as log:
        await log.open("s")
        acked = []
        for n in range(4):
            acked += [event.seq for event in await log.append("s", note(n), note(n + 100))]
        store.mode = mode
        # A group: several appends committed together all fail together.
        failures: list[BaseException] = []

        async def doomed(n: int) -> None:
            try:
                await log.append("s", note(n, 5000))
            except LogWriteFailed as error:
                failures.append(error)

        async with trio.open_nursery() as nursery:
            for n in range(10):
                nursery.start_soon(doomed, 1000 + n)
        assert len(failures) == 10
        assert all(failure.__cause__.errno == code for failure in failures)
        store.mode = None
        await log.close("s")
        # Reopening recovers: a half-written last line is a torn tail and is cut. Whole
        # lines of the failed group may survive (never acknowledged, but on disk);
        # every acknowledged event does, in order.
        reopened = await log.open("s")
        recovered = reopened.events
        assert [event.seq for event in recovered[: len(acked)]] == acked
        extra = recovered[len(acked) :]
        assert all(event.call_id.startswith("c10") for event in extra), extra
        if mode == "before":
            assert not extra and reopened.torn_lines_cut == 0
        (after,) = await log.append("s", note(7))
        assert after.seq == len(recovered) + 1
    events = scan_file(tmp_path / "s.jsonl")
    assert [event.seq for event in events] == list(range(1, len(recovered) + 2))


async def test_a_full_tmpfs_gives_enospc_and_keeps_every_acknowledged_event(base):
    with tiny_tmpfs(base / "fs", "256k") as mount:
        store = JsonlStore(mount / "state", registry=registry())
        acked: list[int] = []
        async with open_session_log(store) as log:
            await log.open("s")
            with pytest.raises(LogWriteFailed) as caught:
                for n in range(10_000):
                    (event,) = await log.append("s", note(n, 7000))
                    acked.append(event.seq)
            assert caught.value.__cause__.errno == errno.ENOSPC
            assert "No space left on device" in str(caught.value)
            assert len(acked) > 5
            with pytest.raises(LogWriteFailed):  # refused until reopened
                await log.append("s", note(-1))
            await log.close("s")
            # Reading back needs no space: every acknowledged event is there, in order.
            reopened = await log.open("s")
            assert [event.seq for event in reopened.events] == acked
            # Still full: a small append may fit or fail, but never corrupts.
            try:
                await log.append("s", note(-2, 100_000))
            except LogWriteFailed as error:
                assert error.__cause__.errno == errno.ENOSPC
            await log.close("s")
        events = scan_file(mount / "state" / "s.jsonl")
        assert [event.seq for event in events][: len(acked)] == acked


async def test_a_full_disk_under_the_harness_runs_nothing_and_says_why(base, project):
    marker = project / "ran"
    with tiny_tmpfs(base / "fs", "256k") as mount:
        state = mount / "state"
        async with open_harness(composition(state)) as harness:
            session = await harness.open_session(cwd=project)
            ok = await session.run_tool("bash", {"command": "echo before"})
            assert ok.text.startswith("before")
            # Fill the disk, leaving less room than the next call's log line needs.
            fill(mount / "filler")
            with pytest.raises(LogWriteFailed, match="No space left on device"):
                await session.run_tool("bash", {"command": f"touch {marker}; : {'x' * 20_000}"})
            assert not marker.exists()  # the call was not logged, so it did not run
            await session.close()
            (mount / "filler").unlink()
            resumed = await harness.resume_session(session.id)
            again = await resumed.run_tool("bash", {"command": "echo after"})
            assert again.text.startswith("after")
            events = await resumed.events()
        names = [event.tag for event in events]
        assert names.count("tool/call") == 2 and names.count("tool/result") == 2
        assert scan_file(state / f"{session.id}.jsonl") == events


def test_sigkill_during_group_commit_never_loses_an_acknowledged_event(tmp_path):
    seed = int.from_bytes(os.urandom(4), "big")
    child = subprocess.run(
        [sys.executable, str(CRASH_CHILD), str(tmp_path), str(ROUNDS), str(seed)],
        capture_output=True,
        text=True,
        timeout=120,
        env=python_env(),
        check=False,
    )
    assert child.returncode == 0, child.stderr
    rounds = [json.loads(line) for line in child.stdout.splitlines()]
    assert len(rounds) == ROUNDS, child.stderr
    torn = 0
    for index, done in enumerate(rounds):
        assert done["ready"], f"seed {seed} round {index}: the appender never started"
        assert os.WIFSIGNALED(done["status"]) and os.WTERMSIG(done["status"]) == signal.SIGKILL
        store = JsonlStore(done["directory"], registry=REGISTRY)
        opened = store.open("s")  # the dead writer's lock went with it
        try:
            seqs = [event.seq for event in opened.events]
            assert seqs == list(range(1, len(seqs) + 1)), f"seed {seed} round {index}"
            lost = set(done["acked"]) - set(seqs)
            assert not lost, f"seed {seed} round {index}: lost acknowledged seqs {sorted(lost)}"
            torn += opened.torn is not None
        finally:
            opened.handle.close()
        path = Path(done["directory"]) / "s.jsonl"
        assert scan_log(path.read_bytes(), str(path), REGISTRY).torn is None
    print(f"seed {seed}: {ROUNDS} kills, {torn} torn tails cut on reopen")
