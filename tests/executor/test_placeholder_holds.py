"""The executor's placeholder holds (executor/_holds.py) against a directory that
changes while a call's batch waits for a placeholder another process has locked."""

from __future__ import annotations

import fcntl
import os

import pytest
import trio

from stockade.executor._holds import PlaceholderHolds
from stockade.sandbox import placeholders


def _fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


async def test_a_root_swapped_while_a_batch_waits_is_a_stale_view(tmp_path):
    """The batch waits (trio.sleep between tries) for `.codex`, locked by a remover;
    meanwhile root is moved away and another directory put in its place. The batch,
    working in the directory it opened, ends by judging it afresh: StaleView, so the
    call is guarded again, and none of its holds is counted as in use."""
    root = tmp_path / "root"
    root.mkdir()
    (root / ".codex").mkdir()
    os.utime(root / ".codex", (0, 0))
    remover = os.open(root / ".codex", os.O_RDONLY)
    fcntl.flock(remover, fcntl.LOCK_EX)
    holds = PlaceholderHolds(linger=0.0)
    blockers = (str(root / ".claude"), str(root / ".codex"))
    before = _fds()

    async def swap() -> None:
        await trio.sleep(0.05)
        root.rename(tmp_path / "away")
        root.mkdir()
        os.close(remover)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(swap)
        with pytest.raises(placeholders.StaleView):
            await holds.hold(blockers, blockers)
    assert not holds._uses
    assert os.listdir(root) == []
    # Guarded again: the holds made earlier are checked against the paths, let go of
    # and made in the directory the paths now name.
    await holds.hold(blockers, blockers)
    try:
        for path in blockers:
            assert placeholders.still_held(holds._held[path], path)
    finally:
        holds.let_go(blockers)
        await holds.release_all()
    assert os.listdir(root) == []
    assert _fds() - before == set()
