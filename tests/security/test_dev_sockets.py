"""Network off, a host daemon's named socket under /dev: `/dev/shm` is a tmpfs where
anyone may bind one, and the Landlock launcher shows the command the host's `/dev`.
A socket there that exists when the call starts is covered as any other (Landlock);
bwrap's `/dev` is private, so it is out of sight there anyway. Judged by what the
host's server received; the unconfined control shows the socket is reached.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from stockade.sandbox.backends import landlock

from .support import ATTACK, ATTACKS, MODES, PYTHON, WW
from .test_network import by_via, stopped, token, unix_server

by_mode = pytest.mark.parametrize("mode", MODES, ids=lambda mode: mode.value)


def shm_socket(terrain) -> Path:
    # Host residue the terrain removes at the end (it sweeps its tag in /dev/shm).
    return Path("/dev/shm") / terrain.host_name("daemon.sock")


@by_mode
@by_via
async def test_a_socket_in_dev_shm_is_not_reached_with_network_off(sandbox, mode, via):
    if sandbox.tier == "plain" and mode is WW:
        # No mount namespace to cover it: the plain tier's named gap.
        result = await sandbox.run("true", mode, via=via)
        assert landlock.LANDLOCK_PATHNAME_GAP in result.network_gaps, result.network_gaps
        sandbox.battery.disclosed(f"a daemon socket in /dev/shm (plain tier, {via})")
        return
    path = shm_socket(sandbox.terrain)
    name = f"network off: a daemon socket in /dev/shm ({mode.value}, {via})"
    with unix_server(path) as inbox, sandbox.battery.attempt(name):
        result = await sandbox.run(
            f"{ATTACK} connect-send {path} {token(sandbox, 'shm')}; rm -f {path}", mode, via=via
        )
        assert inbox.settled() == [], stopped(result)
        assert path.is_socket(), stopped(result)  # nor removed from the host
        if mode is WW:
            assert "connect-send: refused" in result.stdout, stopped(result)


def test_control_a_socket_in_dev_shm_is_reached_unconfined(terrain):
    path = shm_socket(terrain)
    with unix_server(path) as inbox:
        done = subprocess.run(
            [PYTHON, "-I", "-S", ATTACKS, "connect-send", str(path), "reached"],
            capture_output=True,
            text=True,
            timeout=20,
        )
        assert inbox.settled() == [b"reached\n"], done.stdout + done.stderr
    assert not os.path.exists(path)
