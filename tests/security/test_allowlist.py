"""network allowlist on the real kernel (issue 25): an allowed destination is reached
through the proxy by everyday clients; everything else fails closed, the proxy-unaware
client too, and every decision is on the result (and, through a session, in its log).

Traffic goes only to servers this test starts on the host's loopback; an allow entry
names 127.0.0.1 explicitly (a loopback address is refused unless an entry names it).
"""

from __future__ import annotations

import contextlib
import http.server
import json
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from stockade import open_harness
from stockade.executor.actor import open_executor
from stockade.executor.config import ExecutorConfig
from stockade.executor.render import render_result
from stockade.sandbox.actor import open_provider
from stockade.vocab import ExecutionPolicy, Network, SandboxMode, network_denial_marker

from ..support import pids_with_marker, require_backend, stockade

WW = SandboxMode.WORKSPACE_WRITE
# Where the proxy's bridge is wired so far (docs/network.md).
BACKENDS = ["bwrap", "landlock"]


class _Hello(http.server.BaseHTTPRequestHandler):
    """Answers each GET with its own port, and keeps the paths it was asked for."""

    def do_GET(self) -> None:
        self.server.paths.append(self.path)  # type: ignore[attr-defined]
        body = f"hello from {self.server.server_address[1]}\n".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


@contextlib.contextmanager
def serving(count: int) -> Iterator[list[http.server.ThreadingHTTPServer]]:
    """`count` HTTP servers on the host's loopback, each with the paths it was asked."""
    made = [http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello) for _ in range(count)]
    for server in made:
        server.paths = []  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield made
    finally:
        for server in made:
            server.shutdown()
            server.server_close()


@pytest.fixture
def servers() -> Iterator[tuple[int, int]]:
    """Two HTTP servers on the host's loopback: one to allow, one never listed."""
    with serving(2) as made:
        yield made[0].server_address[1], made[1].server_address[1]


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param, require_backend(request.param)


async def run(backend, root, command, *, allow=(), deny=(), mode=WW):
    name, config = backend
    executor_config = ExecutorConfig(kill_grace=0.5, network_allow=allow, network_deny=deny)
    policy = ExecutionPolicy(mode=mode, workspace_root=str(root), network=Network.ALLOWLIST)
    async with (
        open_provider(config) as provider,
        open_executor(executor_config, provider) as executor,
    ):
        result = await executor.run(executor.resolve(command, policy=policy))
    assert result.backend == name and result.network is Network.ALLOWLIST
    return result


@pytest.mark.parametrize("mode", [SandboxMode.READ_ONLY, WW], ids=lambda m: m.value)
async def test_an_allowed_destination_is_reached_by_everyday_clients(
    backend, scratch, servers, mode
):
    allowed, _ = servers
    url = f"http://127.0.0.1:{allowed}/"
    command = (
        f"curl -sS --max-time 10 {url}; "
        f"curl -sS --max-time 10 --socks5-hostname 127.0.0.1:3128 {url}; "
        f'{sys.executable} -I -S -c "import urllib.request as u; '
        f"print(u.urlopen('{url}', timeout=10).read().decode(), end='')\""
    )
    result = await run(backend, scratch, command, allow=[f"127.0.0.1:{allowed}"], mode=mode)
    assert result.stdout == f"hello from {allowed}\n" * 3, result.stderr
    assert result.network_enforcement is not None
    assert [c.allowed for c in result.connections] == [True, True, True]
    assert {c.address for c in result.connections} == {"127.0.0.1"}
    assert {c.protocol for c in result.connections} == {"http", "socks5"}


async def test_everything_else_fails_closed(backend, scratch, servers):
    """Not listed, listed but denied, and the clients that ignore the proxy (curl
    --noproxy, raw TCP and UDP, a DNS lookup): nothing arrives, and each refusal the
    proxy saw carries the marker."""
    allowed, other = servers
    command = "; ".join(
        [
            f"curl -sS --max-time 5 http://127.0.0.1:{other}/",
            f"curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:{allowed}/",
            f'{sys.executable} -I -S -c "import socket; '
            f"socket.create_connection(('127.0.0.1', {allowed}), timeout=5)\"",
            f'{sys.executable} -I -S -c "import socket; s = socket.socket(socket.AF_INET, '
            f"socket.SOCK_DGRAM); s.sendto(b'x', ('127.0.0.1', {allowed}))\"",
            f"{sys.executable} -I -S -c \"import socket; socket.getaddrinfo('example.com', 80)\"",
            "true",
        ]
    )
    result = await run(
        backend,
        scratch,
        command,
        allow=[f"127.0.0.1:{other}"],
        deny=[f"127.0.0.1:{other}"],
    )
    assert "hello from" not in result.stdout, repr(result.stdout + result.stderr)
    refused = [c for c in result.connections if not c.allowed]
    assert [c.destination for c in refused] == [f"127.0.0.1:{other}"], result.connections
    assert len(result.connections) == 1  # the proxy-unaware clients never reached it
    assert "denied" in refused[0].reason  # deny wins over the same allow entry
    assert network_denial_marker(f"127.0.0.1:{other}") in render_result(result)


async def test_a_name_that_resolves_to_loopback_is_refused(backend, scratch, servers):
    """Only the name is listed; it resolves to 127.0.0.1, which no entry names: the
    DNS-rebinding defence refuses it."""
    allowed, _ = servers
    result = await run(
        backend,
        scratch,
        f"curl -sS --max-time 5 http://localhost:{allowed}/; true",
        allow=[f"localhost:{allowed}"],
    )
    assert "hello from" not in result.stdout
    assert [(c.host, c.allowed) for c in result.connections] == [("localhost", False)]


async def test_an_empty_allowlist_allows_nothing(backend, scratch, servers):
    allowed, _ = servers
    # The loopback is the call's own (NO_PROXY names it: no allow entry names the
    # host's), where nothing listens; a name goes to the proxy, which refuses it.
    result = await run(
        backend,
        scratch,
        f"curl -sS --max-time 5 http://127.0.0.1:{allowed}/; "
        "curl -sS --max-time 5 http://example.com/",
    )
    assert "hello from" not in result.stdout
    assert [(c.host, c.allowed) for c in result.connections] == [("example.com", False)]


async def test_a_session_logs_every_connection(backend, scratch, servers, tmp_path_factory):
    name, _ = backend
    allowed, other = servers
    state_dir = Path(scratch) / "state"
    root = Path(scratch) / "project"
    root.mkdir()
    entries = [
        {"id": "sandbox", "name": "stockade.sandbox.local", "config": {"backend": name}},
        {
            "id": "bash",
            "name": "stockade.bash.sandbox",
            "config": {"network": "allowlist", "network_allow": [f"127.0.0.1:{allowed}"]},
        },
        {"id": "log", "name": "stockade.session.log", "config": {"state_dir": str(state_dir)}},
    ]
    command = (
        f"curl -sS --max-time 5 http://127.0.0.1:{allowed}/; "
        f"curl -sS --max-time 5 http://127.0.0.1:{other}/; true"
    )
    async with open_harness(entries) as harness:
        session = await harness.open_session(cwd=root)
        result = await session.run_tool("bash", {"command": command})
        events = [e for e in await session.events() if type(e).__name__ == "NetworkConnected"]
    assert f"hello from {allowed}" in result.text
    assert network_denial_marker(f"127.0.0.1:{other}") in result.text
    seen = [(e.host, e.port, e.allowed, e.address) for e in events]
    assert seen == [
        ("127.0.0.1", allowed, True, "127.0.0.1"),
        ("127.0.0.1", other, False, "127.0.0.1"),
    ], seen


def test_stockade_run_allow(backend, scratch, servers):
    """`stockade run --allow HOST:PORT` as a person types it: the listed one answers,
    the other is refused with the marker, and --json lists both decisions."""
    name, _ = backend
    allowed, other = servers
    command = (
        f"curl -sS --max-time 5 http://127.0.0.1:{allowed}/; "
        f"curl -sS --max-time 5 http://127.0.0.1:{other}/; true"
    )
    done = stockade(
        "run",
        "--json",
        "--backend",
        name,
        "--allow",
        f"127.0.0.1:{allowed}",
        command,
        cwd=scratch,
    )
    assert done.returncode == 0, done.stderr
    facts = json.loads(done.stdout)
    assert facts["network"] == "allowlist"
    assert (
        f"hello from {allowed}" in facts["stdout"] and f"hello from {other}" not in facts["stdout"]
    )
    assert [(c["port"], c["allowed"]) for c in facts["connections"]] == [
        (allowed, True),
        (other, False),
    ]
    text = stockade(
        "run", "--backend", name, "--allow", f"127.0.0.1:{allowed}", command, cwd=scratch
    )
    assert network_denial_marker(f"127.0.0.1:{other}") in text.stderr, text.stderr


class _Files(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def file_server(tmp_path) -> Iterator[tuple[Path, int]]:
    """A static HTTP server on loopback over a directory: a PEP 503 index, a dumb-HTTP
    git repository."""
    import functools
    import subprocess

    served = tmp_path / "served"
    (served / "simple" / "demo").mkdir(parents=True)
    from .test_deny_read import _wheel

    wheel = _wheel(served / "simple" / "demo")
    (served / "simple" / "demo" / "index.html").write_text(f'<a href="{wheel}">{wheel}</a>\n')
    work = tmp_path / "work"
    work.mkdir()
    git = ["git", "-c", "user.email=a@b", "-c", "user.name=a", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(work)], check=True)
    (work / "README").write_text("served over http\n")
    subprocess.run([*git, "-C", str(work), "add", "README"], check=True)
    subprocess.run([*git, "-C", str(work), "commit", "-qm", "one"], check=True)
    subprocess.run(
        ["git", "clone", "-q", "--bare", str(work), str(served / "repo.git")], check=True
    )
    subprocess.run(["git", "-C", str(served / "repo.git"), "update-server-info"], check=True)
    handler = functools.partial(_Files, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield served, server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


async def test_pip_and_git_through_the_proxy(backend, scratch, file_server):
    _, port = file_server
    base = f"http://127.0.0.1:{port}"
    command = (
        "set -e; "
        f"{sys.executable} -m pip download --no-cache-dir --no-deps --disable-pip-version-check "
        f"-q -d dl --index-url {base}/simple demo; "
        f"git clone -q {base}/repo.git clone; cat clone/README"
    )
    result = await run(backend, scratch, command, allow=[f"127.0.0.1:{port}"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "served over http\n"
    assert (Path(scratch) / "dl" / "demo-1.0-py3-none-any.whl").exists()
    assert result.connections and all(c.allowed for c in result.connections)


SOCKS_NUL = r"""\
import socket, sys
s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
s.sendall(b"\x05\x01\x00")
s.recv(2)
name = b"127.0.0.1\x00.example.com"
port = int(sys.argv[1]).to_bytes(2, "big")
s.sendall(b"\x05\x01\x00\x03" + bytes([len(name)]) + name + port)
print("socks-reply", s.recv(2)[1])
"""
HOST_MISMATCH = r"""\
import socket, sys
allowed, other = sys.argv[1], sys.argv[2]
s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
s.sendall(f"CONNECT 127.0.0.1:{allowed} HTTP/1.1\r\nHost: 127.0.0.1:{allowed}\r\n\r\n".encode())
s.recv(4096)
s.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{other}\r\nConnection: close\r\n\r\n".encode())
reply = b""
while chunk := s.recv(4096):
    reply += chunk
print(reply.decode().strip().splitlines()[-1])
"""


async def test_the_published_bypasses_fail(backend, scratch, servers, tmp_path):
    """An IPv6 literal, the cloud metadata address (even with its /16 listed), a SOCKS5
    name with a NUL byte, a tunnel whose inner Host names another destination, and a
    host daemon's Unix socket: none reaches anything but the listed server."""
    import socket as sockets

    allowed, other = servers
    daemon = Path(tempfile.mkdtemp(prefix="stockade-daemon-", dir="/var/tmp")) / "d.sock"
    listener = sockets.socket(sockets.AF_UNIX)
    listener.bind(str(daemon))
    listener.listen()
    listener.settimeout(0.2)
    (Path(scratch) / "socks.py").write_text(SOCKS_NUL)
    (Path(scratch) / "host.py").write_text(HOST_MISMATCH)
    py = f"{sys.executable} -I -S"
    command = "; ".join(
        [
            f"curl -sS --max-time 5 'http://[::1]:{allowed}/'",
            "curl -sS --max-time 5 http://169.254.169.254/latest/meta-data/",
            f"{py} socks.py {allowed}",
            f"{py} host.py {allowed} {other}",
            f"{py} -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{daemon}')\" "
            "&& echo daemon-reached",
            f'{py} -c "import socket; s = socket.socket(socket.AF_UNIX); '
            f"s.connect('/proc/1/root{daemon}')\" && echo daemon-reached",
            "true",
        ]
    )
    try:
        result = await run(
            backend,
            scratch,
            command,
            allow=[f"127.0.0.1:{allowed}", "169.254.0.0/16"],
        )
        try:
            listener.accept()
            reached = True
        except OSError:
            reached = False
    finally:
        listener.close()
        shutil.rmtree(daemon.parent, ignore_errors=True)
    out = result.stdout
    assert not reached and "daemon-reached" not in out, (out, result.stderr)
    assert "socks-reply 2" in out, (out, result.stderr)  # 0x02: not allowed by the ruleset
    assert f"hello from {allowed}" in out and f"hello from {other}" not in out
    refused = {c.host: c for c in result.connections if not c.allowed}
    assert {"::1", "169.254.169.254"} <= set(refused), result.connections


def exec_allowing(backend: str, port: int, script: str, **kwargs):
    """`stockade exec --allow 127.0.0.1:PORT -- sh -c SCRIPT` on `backend`."""
    return stockade(
        "exec", "--backend", backend, "--allow", f"127.0.0.1:{port}", "--", "sh", "-c", script,
        **kwargs,
    )  # fmt: skip


def test_stockade_exec_allow(backend, scratch, servers):
    """`stockade exec --allow`: exec runs no event loop, so the call's proxy runs in a
    process of its own, which ends with exec (no process, no socket left)."""
    name, _ = backend
    allowed, other = servers
    done = exec_allowing(
        name,
        allowed,
        f"curl -sS --max-time 5 http://127.0.0.1:{allowed}/; "
        f"curl -sS --max-time 5 http://127.0.0.1:{other}/ >/dev/null; true",
        cwd=scratch,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"hello from {allowed}\n"
    assert network_denial_marker(f"127.0.0.1:{other}") in done.stderr
    assert not pids_with_marker("stockade.network.serve")


def test_stockade_exec_allow_under_a_deep_tmpdir(backend, scratch, servers, tmp_path):
    """A $TMPDIR deeper than a Unix socket's address may name (a build tool's, a CI
    job's): the proxy's socket and a fresh bwrap probe's go to /tmp instead, and the
    call is as under a short one (it failed with a traceback: "AF_UNIX path too long")."""
    from stockade.network import UNIX_PATH_MAX

    name, _ = backend
    allowed, _ = servers
    deep = Path(tempfile.mkdtemp(prefix="stockade-deep-", dir="/var/tmp"))
    try:
        tmpdir = deep / ("d" * 60) / ("e" * 40)
        tmpdir.mkdir(parents=True)
        # The control: a socket there would not fit (probe.sock, proxy.sock in a directory).
        assert len(str(tmpdir / "stockade-proxy-12345678" / "proxy.sock")) > UNIX_PATH_MAX
        done = exec_allowing(
            name,
            allowed,
            f"curl -sS --max-time 5 http://127.0.0.1:{allowed}/",
            cwd=scratch,
            # A fresh cache: no remembered verdict, so this call probes its backend.
            env={"TMPDIR": str(tmpdir), "XDG_CACHE_HOME": str(tmp_path / "cache")},
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == f"hello from {allowed}\n"
        assert "Traceback" not in done.stderr
    finally:
        shutil.rmtree(deep, ignore_errors=True)


async def test_a_running_job_reports_its_connections_once_each(backend, scratch, servers):
    """A background job's report carries the connections decided since the last one,
    while it runs too; each connection is in exactly one advancing report."""
    name, config = backend
    allowed, other = servers
    executor_config = ExecutorConfig(kill_grace=0.5, network_allow=[f"127.0.0.1:{allowed}"])
    policy = ExecutionPolicy(mode=WW, workspace_root=str(scratch), network=Network.ALLOWLIST)
    command = (
        f"curl -sS --max-time 5 http://127.0.0.1:{allowed}/ >/dev/null; echo first; "
        "sleep 1; "
        f"curl -sS --max-time 5 http://127.0.0.1:{other}/ >/dev/null; echo second"
    )
    async with (
        open_provider(config) as provider,
        open_executor(executor_config, provider) as executor,
    ):
        handle = await executor.start(executor.resolve(command, policy=policy))
        seen, while_running = [], []
        while True:
            report = await executor.job_output(handle.id)
            seen += [(c.port, c.allowed) for c in report.connections]
            if report.state != "running":
                break
            while_running += report.connections
            await trio.sleep(0.05)
    assert report.backend == name
    assert seen == [(allowed, True), (other, False)], seen
    # The first is reported while the job runs (it sleeps a second after it); the
    # second may be too, if a report lands between that curl and the job's exit (on
    # a loaded machine it did): not what this judges.
    assert [c.port for c in while_running][:1] == [allowed], while_running
