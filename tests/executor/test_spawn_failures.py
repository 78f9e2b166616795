"""A spawn that raises started nothing: no command runs on, unsupervised, after its
call was told it could not start."""

from __future__ import annotations

import errno
import os

import pytest
import trio

from stockade.executor import _spawn
from stockade.messages import Terminal


async def test_a_terminal_spawn_that_fails_after_the_fork_leaves_no_command_running(
    tmp_path, monkeypatch
):
    class NoDescriptorLeft(_spawn.TerminalOutput):
        def __init__(self, master: int) -> None:
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))

    monkeypatch.setattr(_spawn, "TerminalOutput", NoDescriptorLeft)
    before = set(os.listdir("/proc/self/fd"))
    master, slave = os.openpty()
    marker = tmp_path / "ran"
    try:
        with pytest.raises(OSError):
            await _spawn.spawn(
                ["sh", "-c", f"touch {marker}"],
                cwd=str(tmp_path),
                env=dict(os.environ),
                with_stdin=False,
                terminal=Terminal(slave=slave, master=master),
            )
        await trio.sleep(0.5)
        assert not marker.exists()  # the command never ran
    finally:
        os.close(master)
    assert set(os.listdir("/proc/self/fd")) == before  # the slave released, no pipe left
