# ruff: noqa: F811 (the `launcher` fixture comes from test_launcher.py)
"""The launcher's proxy bridge, on the real kernel: --private-network and
--proxy-bridge PORT:PATH (docs/backends.md, "The proxy bridge").

A confined command in a network namespace of its own reaches a Unix socket on the
host (the harness's proxy; here an echo server the test starts) only through the
bridge on its own loopback, and nothing else: a TCP server on the host's loopback is
out of reach. Both forms: the Landlock launcher's own namespace, and bwrap
--unshare-net with the launcher as its filter stage. Traffic stays on loopback.
"""

import json
import os
import shutil
import socket
import socketserver
import tempfile
import threading
import time
from pathlib import Path

import pytest

from ..support import IN_CI, pids_with_marker
from .test_launcher import NOBODY, assert_launcher_failure, launcher, run  # noqa: F401

pytestmark = [pytest.mark.kernel, pytest.mark.nobody]
EMPTY = Path(__file__).resolve().parents[2] / "src" / "stockade" / "_data" / "empty"
requires_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs a root caller")

PORT = 18080  # in the call's own network namespace: no clash with the host's
SYSTEM_PYTHON = "/usr/bin/python3"  # nobody may not reach the venv's interpreter
PAYLOAD = 300_000  # several of the bridge's 64 KiB buffers, each way

CLIENT = r"""
import errno, json, os, socket, sys
port, host_port, size, proxy = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
def attempt(call):
    try:
        return call()
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
def echo(family, address):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(address)
    s.sendall(b"x" * size)
    s.shutdown(socket.SHUT_WR)  # the answer comes after our EOF: half-close is relayed
    got = b""
    while chunk := s.recv(65536):
        got += chunk
    s.close()
    return "OK" if got == b"echo:" + b"x" * size else f"got {len(got)} bytes"
def refused(family, kind=socket.SOCK_STREAM, proto=0):
    s = socket.socket(family, kind, proto)
    s.close()
    return "OK"
def direct():
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(proxy)
    return "OK"
with open("/proc/net/if_inet6") as f:  # this namespace's own
    has_v6 = any(line.split()[-1] == "lo" for line in f)
# A connection the command leaves open when it ends: the bridge must go anyway.
held = socket.create_connection(("127.0.0.1", port), timeout=10)
held.sendall(b"held")
bridges = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        words = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        argv0 = words[0]
        status = dict(
            line.split(":\t", 1) for line in open(f"/proc/{pid}/status").read().splitlines()
            if ":\t" in line
        )
    except OSError:
        continue
    # This call's (a PID namespace shared with the host shows another call's too).
    ours = f"{port}:{proxy}".encode() in words
    if argv0.endswith(b"landlock-run") and ours and status["Seccomp"].strip() == "2":
        bridges.append({
            "caps": [int(status[k], 16) for k in ("CapPrm", "CapEff", "CapBnd", "CapAmb")],
            "no_new_privs": status["NoNewPrivs"].strip(),
            "own_session": status["NSsid"].split()[-1] == status["NSpid"].split()[-1],
        })
print(json.dumps({
    "v4": attempt(lambda: echo(socket.AF_INET, ("127.0.0.1", port))),
    "v6": attempt(lambda: echo(socket.AF_INET6, ("::1", port))) if has_v6 else "no ::1",
    "host": attempt(lambda: socket.create_connection(("127.0.0.1", host_port), timeout=5)),
    "direct": attempt(direct),
    "vsock": attempt(lambda: refused(40)),
    "packet": attempt(lambda: refused(socket.AF_PACKET, socket.SOCK_RAW)),
    "pid": os.getpid(),
    "bridges": bridges,
}))
"""


@pytest.fixture
def public():
    """A directory (and ancestors) nobody can traverse: the launcher, the socket."""
    path = Path(tempfile.mkdtemp(prefix="stockade-bridge-", dir="/var/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


class Echo(socketserver.BaseRequestHandler):
    """Reads to EOF, then answers `echo:` and what it read: the proxy's stand-in."""

    def handle(self):
        got = b""
        while chunk := self.request.recv(65536):
            got += chunk
        self.server.seen.append(got)  # type: ignore[attr-defined]
        if got != b"held":
            self.request.sendall(b"echo:" + got)


@pytest.fixture
def proxy(public):
    """An echo server on a Unix socket anyone may reach, and a TCP server on the host's
    loopback that the command must not reach."""
    path = public / "proxy.sock"
    server = socketserver.ThreadingUnixStreamServer(str(path), Echo)
    server.daemon_threads = True
    server.seen = []  # type: ignore[attr-defined]
    path.chmod(0o777)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host = socket.socket()
    host.bind(("127.0.0.1", 0))
    host.listen(4)
    host.setblocking(False)
    yield path, host, server
    server.shutdown()
    server.server_close()
    host.close()


def bwrap():
    found = shutil.which("bwrap")
    if found is None:
        if IN_CI:
            pytest.fail("CI=true and bwrap is missing")
        pytest.skip("bwrap is not installed")
    return found


def command_line(form, launcher, sock):
    """How each form confines the command, with its bridge to `sock`."""
    bridge = ["--proxy-bridge", f"{PORT}:{sock}"]
    pairs = ["--unix-pairs-only"] if form.endswith("unix-pairs-only") else []
    # Under bwrap the bridge starts before the command's own mount namespace: the proxy's
    # socket can be hidden from the command and still be the bridge's way out.
    hide = ["--empty", EMPTY, "--hide-socket", sock] if form == "bwrap-hidden" else []
    caps = ["--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP"] if hide else []
    if form.startswith("landlock"):
        return [launcher, "--ro", "/", "--rw", "/dev/null", "--private-network", *pairs,
                *bridge, "--"]  # fmt: skip
    # bwrap's PID namespace ends the bridge with the command; without one, its pidfd does.
    pid_ns = [] if "shared-pid" in form else ["--unshare-pid"]
    return [bwrap(), "--unshare-net", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--die-with-parent", *pid_ns, *caps, "--bind", sock.parent, sock.parent, "--",
            launcher, "--filters-only", "--netns-only", *pairs, *hide, *bridge, "--"]  # fmt: skip


def confined(form, launcher, proxy, as_nobody=False):
    sock, host, _ = proxy
    args = [*command_line(form, launcher, sock), SYSTEM_PYTHON, "-I", "-c", CLIENT, PORT,
            host.getsockname()[1], PAYLOAD, sock]  # fmt: skip
    kwargs = {"user": NOBODY, "group": NOBODY, "extra_groups": [], "cwd": "/"} if as_nobody else {}
    result = run(*args, **kwargs)
    assert result.returncode == 0, result
    return json.loads(result.stdout)


def assert_only_the_proxy_was_reached(out, proxy, direct="OK"):
    _, host, _ = proxy
    assert out["v4"] == "OK", out
    assert out["v6"] in ("OK", "no ::1"), out
    # Its own loopback has nothing on the host's port; the host's server saw nothing.
    assert out["host"] == "ECONNREFUSED", out
    with pytest.raises(BlockingIOError):
        host.accept()
    # The --netns-only families: vsock ignores network namespaces, packet sockets too.
    assert out["vsock"] == "EAFNOSUPPORT" and out["packet"] == "EAFNOSUPPORT", out
    # The proxy's socket itself: in sight (the proxy decides either way) unless hidden,
    # or no AF_UNIX socket at all for the command.
    assert out["direct"] == direct, out
    # The bridge: no capability, no_new_privs, a session of its own.
    assert out["bridges"] == [{"caps": [0, 0, 0, 0], "no_new_privs": "1", "own_session": True}]


def launcher_processes(launcher, sock):
    """Host pids running the launcher for this call: its init, its bridge (bwrap's own
    processes are the executor's to wait for: it waits for bwrap's init, --info-fd)."""
    found = []
    for pid in pids_with_marker(str(sock)):
        try:
            argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
        except OSError:
            continue
        if argv0 == str(launcher).encode():
            found.append(pid)
    return found


def assert_the_bridge_is_gone(launcher, proxy):
    """No process of the launcher's is left, and the connection the command left open
    was closed on the proxy's side: the bridge went with the call."""
    sock, _, server = proxy
    deadline = time.monotonic() + 5  # the pidfd form ends the bridge just after the call
    while time.monotonic() < deadline and (
        launcher_processes(launcher, sock) or b"held" not in server.seen
    ):
        time.sleep(0.02)
    assert launcher_processes(launcher, sock) == []
    assert b"held" in server.seen


FORMS = {
    "landlock": "OK",
    "landlock-unix-pairs-only": "EAFNOSUPPORT",
    "bwrap": "OK",
    "bwrap-shared-pid-unix-pairs-only": "EAFNOSUPPORT",
    "bwrap-hidden": "ECONNREFUSED",
}


@requires_root
@pytest.mark.parametrize("form", FORMS)
def test_the_command_reaches_the_proxy_and_nothing_else(launcher, proxy, public, form):
    """Half-closed echo of 300 kB through the bridge on 127.0.0.1 (and ::1 where the
    namespace has it); the host's loopback refused; the bridge is under none of the
    command's filters (with --unix-pairs-only the command has no AF_UNIX socket, the
    bridge does; a socket hidden from the command is still the bridge's) and holds
    nothing; no process outlives the call."""
    out = confined(form, launcher, proxy)
    assert_only_the_proxy_was_reached(out, proxy, direct=FORMS[form])
    # Landlock: init is pid 1, the bridge pid 2 (before the command), the command pid 3.
    if form.startswith("landlock"):
        assert out["pid"] == 3, out
    assert_the_bridge_is_gone(launcher, proxy)


@requires_root
@pytest.mark.parametrize("form", ["landlock", "bwrap"])
def test_an_unprivileged_caller_gets_the_bridge_through_a_user_namespace(
    launcher, proxy, public, form
):
    """As nobody: the launcher makes the network namespace (and brings up its loopback)
    inside a user namespace mapping only the caller; bwrap does the same for itself."""
    copy = Path(shutil.copy2(launcher, public / "landlock-run"))
    copy.chmod(0o755)
    out = confined(form, copy, proxy, as_nobody=True)
    assert_only_the_proxy_was_reached(out, proxy)
    assert_the_bridge_is_gone(copy, proxy)


def test_a_proxy_that_is_not_there_resets_the_connection(launcher, public):
    """The bridge accepts, cannot reach PATH, and resets: the client sees a broken
    connection, never a clean empty answer."""
    script = (
        "import socket, sys\n"
        "try:\n"
        "    s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=5)\n"
        "    print(s.recv(10))\n"  # the reset may come before connect() returns
        "except ConnectionResetError:\n    print('reset')\n"
    )
    result = run(
        launcher, "--ro", "/", "--rw", "/dev/null", "--private-network", "--proxy-bridge",
        f"{PORT}:{public / 'gone.sock'}", "--", SYSTEM_PYTHON, "-I", "-c", script, PORT,
    )  # fmt: skip
    assert result.stdout == "reset\n", result


LANDLOCK = ["--ro", "/", "--rw", "/dev/null"]


@pytest.mark.parametrize(
    "args, mention",
    [
        ([*LANDLOCK, "--proxy-bridge", "80:/s", "--", "true"], "needs --private-network"),
        (["--filters-only", "--proxy-bridge", "80:/s", "--", "true"], "needs --netns-only"),
        (["--filters-only", "--no-network", "--proxy-bridge", "80:/s", "--", "true"],
         "needs --netns-only"),
        (["--filters-only", "--private-network", "--", "true"], "--private-network"),
        ([*LANDLOCK, "--no-network", "--private-network", "--", "true"], "exclude each other"),
        ([*LANDLOCK, "--private-network", "--proxy-bridge"], "needs PORT:PATH"),
        ([*LANDLOCK, "--private-network", "--proxy-bridge", "80", "--", "true"], "not 80"),
        ([*LANDLOCK, "--private-network", "--proxy-bridge", "0:/s", "--", "true"],
         "port 0 (any) only with --plain"),
        ([*LANDLOCK, "--private-network", "--proxy-bridge", "65536:/s", "--", "true"],
         "0 to 65535"),
        ([*LANDLOCK, "--private-network", "--proxy-bridge", "+80:/s", "--", "true"], "not +80"),
        ([*LANDLOCK, "--private-network", "--proxy-bridge", "80:", "--", "true"], "socket path"),
        ([*LANDLOCK, "--private-network", "--proxy-bridge", "80:/" + "s" * 108, "--", "true"],
         "too long"),
        ([*LANDLOCK, "--private-network", "--proxy-bridge", "80:/a", "--proxy-bridge", "80:/b",
          "--", "true"], "given twice"),
        # Landlock mode: the bridge lives behind the call's covers, which would blind it.
        ([*LANDLOCK, "--private-network", "--empty", EMPTY, "--hide-socket", "/run/p.sock",
          "--proxy-bridge", "80:/run/p.sock", "--", "true"], "also a --hide-socket path"),
        ([*LANDLOCK, "--private-network", "--deny-read", "/run", "--proxy-bridge",
          "80:/run/p.sock", "--", "true"], "under --deny-read /run"),
    ],
)  # fmt: skip
def test_bridge_options_are_checked(launcher, args, mention):
    assert_launcher_failure(run(launcher, *args), mention)


def test_a_bridge_that_cannot_start_fails_the_call_with_one_line(launcher):
    """The bridge reports through the launcher, which fails before the command runs:
    here a descriptor limit that leaves it no connection."""
    result = run(
        "prlimit", "--nofile=12:12", launcher, *LANDLOCK, "--private-network",
        "--proxy-bridge", f"{PORT}:/nowhere.sock", "--", "echo", "RAN",
    )  # fmt: skip
    assert_launcher_failure(result, "the descriptor limit (12) leaves the bridge no connection")
