"""A command's own local server works with the network off or on an allowlist, and the
host's loopback stays out of reach (issue 37).

Real kernel: bwrap and the Landlock launcher's namespaced tier give each call a
loopback of its own, so a test suite's server on 127.0.0.1 and the client beside it
in one command need no escalation; a server the host runs on 127.0.0.1 is not
reachable from there (the control shows it is, unconfined). The plain tier has no
network namespace: a standing limit `probe` and docs/backends.md state.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from stockade import open_harness

from ..support import require_backend

BACKENDS = ("bwrap", "landlock")

SERVE_AND_FETCH = (
    f'{sys.executable} -c "import http.server,socketserver,threading,urllib.request;'
    "s=socketserver.TCPServer(('127.0.0.1',0),http.server.SimpleHTTPRequestHandler);"
    "threading.Thread(target=s.serve_forever,daemon=True).start();"
    "print('OWN', urllib.request.urlopen('http://127.0.0.1:%d/' % s.server_address[1],"
    ' timeout=5).status)"'
)


@pytest.fixture
def host_server() -> Iterator[int]:
    """A server on the host's own loopback, answering `HOST-SECRET`."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            conn.sendall(b"HOST-SECRET\n")
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        listener.close()


def reach(port: int) -> str:
    return (
        f"{sys.executable} -c \"import socket;s=socket.create_connection(('127.0.0.1',{port}),3);"
        "print('GOT', s.recv(64))\""
    )


def test_the_control_the_hosts_loopback_server_is_reachable_unconfined(host_server):
    done = subprocess.run(reach(host_server), shell=True, capture_output=True, text=True)
    assert "HOST-SECRET" in done.stdout


def composition(backend: str, network: str) -> list[dict]:
    return [
        {"id": "sandbox", "name": "stockade.sandbox.local", "config": {"backend": backend}},
        {
            "id": "bash",
            "name": "stockade.bash.sandbox",
            "config": {"network": network, "network_allow": ["example.invalid:443"]},
        },
        {"id": "approval", "name": "stockade.approval.user"},
    ]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("network", ("off", "allowlist"))
@pytest.mark.parametrize("mode", ("workspace-write", "read-only"))
async def test_a_commands_own_server_works_and_the_hosts_does_not(
    backend, network, mode, host_server, tmp_path
):
    require_backend(backend)
    async with open_harness(composition(backend, network)) as harness:
        session = await harness.open_session(cwd=str(tmp_path))
        await session.set_sandbox_mode(mode)
        own = await session.run_tool("bash", {"command": SERVE_AND_FETCH})
        assert "OWN 200" in own.text, own.text
        assert not own.facts["denied"] and own.facts.get("exit_code") == 0, own.text
        host = await session.run_tool("bash", {"command": reach(host_server)})
        assert "HOST-SECRET" not in host.text, host.text
        assert host.facts.get("exit_code") not in (0, None), host.text
