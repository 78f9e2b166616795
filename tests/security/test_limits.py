"""What the sandbox does NOT govern, pinned so the threat model stays true.

Not counted as attempts: each test asserts the documented limit holds as written
(docs/security.md, "Out of scope"). If a backend starts governing one, the test fails
and the page changes with it.
"""

from __future__ import annotations

import socket
import threading

import pytest
import trio

from stockade.vocab import Network

from .support import ATTACK, MODES, WW


def serve_once(path: str, into) -> threading.Thread:
    """A host service (outside any sandbox) that writes what it is sent to `into`."""
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(1)
    server.settimeout(10)

    def serve() -> None:
        with server:
            try:
                connection, _ = server.accept()
            except TimeoutError:
                return
            with connection:
                into.write_bytes(connection.recv(1024))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("mode", MODES, ids=lambda mode: mode.value)
async def test_a_host_service_on_a_unix_socket_acts_for_a_confined_command(sandbox, mode):
    """With network on, IPC is not a file effect: connecting to a pathname Unix socket
    is governed by neither backend (bwrap's read-only bind does not apply to sockets,
    Landlock has no right for connect). A service listening there writes with ITS
    authority. (Network off covers it: tests/security/test_network.py.)"""
    terrain = sandbox.terrain
    path = str(terrain.base / "deputy.sock")
    written = terrain.outside / "deputy.txt"
    thread = serve_once(path, written)
    result = await sandbox.run(
        f"{ATTACK} connect-send {path} via-the-deputy", mode, network=Network.ON
    )
    await trio.to_thread.run_sync(thread.join, 10)
    assert "connect-send: DONE" in result.stdout, result.stdout
    assert written.read_text() == "via-the-deputy\n"


async def test_a_setsid_survivor_ends_with_its_call(sandbox):
    """A process that leaves the group with setsid does not outlive its call, on either
    backend (a PID namespace of the call's own: bwrap's, the Landlock launcher's), so
    the grants it started with end with the call: it never writes the workspace after
    the call returned (the control, a bare setsid outliving its script, is
    tests/launcher/test_launcher_pidns.py)."""
    terrain = sandbox.terrain
    late = terrain.root / "late"
    # Its output goes to /dev/null, so the call returns without waiting for its pipes.
    await sandbox.run(
        f"setsid -f bash -c 'sleep 0.6; echo late > {late}' >/dev/null 2>&1; sleep 0.05", WW
    )
    assert not late.exists()
    await trio.sleep(1.2)
    assert not late.exists()
