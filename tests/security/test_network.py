"""The escape battery, network: with network `off` no confined command reaches the
host's network. Through the executor, bwrap AND Landlock, read-only and
workspace-write, from a foreground call and from a background job; a subset as an
unprivileged caller (uid 65534), through `stockade exec` and through `stockade run`.

Only loopback and sockets this test starts on this host are involved. The verdict
is what the host's own servers received (a TCP server and a UDP listener on the
host's 127.0.0.1, Unix socket servers outside the roots, a packet sniffer on the
host's `lo`, a vsock port), never the command's text; every attack has an
unconfined control below showing it reaches that server when nothing confines it.
With network `on` the same servers are reached (today's behaviour).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from stockade.sandbox import _profiles
from stockade.sandbox.backends import landlock
from stockade.vocab import Enforcement, Network

from ..support import require_backend
from .support import ATTACK, ATTACKS, IS_ROOT, MODES, PYTHON, RO, TAG_PREFIX, WW
from .test_unprivileged import confined_as_nobody, nobody_terrain, runner  # noqa: F401

pytestmark = pytest.mark.nobody
OFF, ON = Network.OFF, Network.ON
by_mode = pytest.mark.parametrize("mode", MODES, ids=lambda mode: mode.value)
by_via = pytest.mark.parametrize("via", ["run", "job"])
as_root_only = pytest.mark.skipif(not IS_ROOT, reason="needs a root caller")
SYSTEM_PYTHON = "/usr/bin/python3"
HAS_VSOCK = hasattr(socket, "AF_VSOCK") and os.path.exists("/dev/vsock")


# --- the host's servers -------------------------------------------------------------


class Inbox:
    """Everything a host server received, gathered by a thread."""

    def __init__(self) -> None:
        self.items: list[bytes] = []
        self._lock = threading.Lock()

    def add(self, item: bytes) -> None:
        with self._lock:
            self.items.append(item)

    def settled(self, seconds: float = 0.3, expect: int = 0) -> list[bytes]:
        """What was received after `seconds`, and once `expect` items have arrived (or
        10 s passed): a loaded host may take longer than `seconds` to accept."""
        time.sleep(seconds)
        deadline = time.monotonic() + 10
        while len(self.items) < expect and time.monotonic() < deadline:
            time.sleep(0.02)
        with self._lock:
            return list(self.items)


@contextlib.contextmanager
def serving(server: socket.socket, stream: bool) -> Iterator[Inbox]:
    """Accept (stream) or receive (datagram) on `server` until the block ends."""
    inbox, stop = Inbox(), threading.Event()
    server.settimeout(0.05)

    def serve() -> None:
        while not stop.is_set():
            try:
                if stream:
                    connection, _ = server.accept()
                    with connection:
                        connection.settimeout(2)
                        data = b""
                        with contextlib.suppress(OSError):
                            while chunk := connection.recv(256):
                                data += chunk
                        inbox.add(data or b"<connected>")
                else:
                    inbox.add(server.recv(256))
            except (TimeoutError, BlockingIOError):
                continue
            except OSError:
                return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield inbox
    finally:
        stop.set()
        thread.join(5)
        server.close()


@contextlib.contextmanager
def tcp_server() -> Iterator[tuple[int, Inbox]]:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    with serving(server, stream=True) as inbox:
        yield server.getsockname()[1], inbox


@contextlib.contextmanager
def udp_server() -> Iterator[tuple[int, Inbox]]:
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind(("127.0.0.1", 0))
    with serving(server, stream=False) as inbox:
        yield server.getsockname()[1], inbox


@contextlib.contextmanager
def unix_server(path: Path, kind: int = socket.SOCK_STREAM) -> Iterator[Inbox]:
    server = socket.socket(socket.AF_UNIX, kind)
    server.bind(str(path))
    if kind == socket.SOCK_STREAM:
        server.listen(16)
    try:
        with serving(server, stream=kind == socket.SOCK_STREAM) as inbox:
            yield inbox
    finally:
        with contextlib.suppress(OSError):
            path.unlink()


@contextlib.contextmanager
def lo_sniffer(marker: bytes) -> Iterator[Inbox]:
    """Frames on the host's `lo` carrying `marker` (a packet socket sees them all)."""
    sniffer = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    sniffer.bind(("lo", 0))
    inbox, stop = Inbox(), threading.Event()
    sniffer.settimeout(0.05)

    def sniff() -> None:
        while not stop.is_set():
            try:
                frame = sniffer.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            if marker in frame:
                inbox.add(frame)

    thread = threading.Thread(target=sniff, daemon=True)
    thread.start()
    try:
        yield inbox
    finally:
        stop.set()
        thread.join(5)
        sniffer.close()


def vsock_port_taken(port: int) -> bool:
    """Whether some process (any network namespace: vsock ignores them) holds `port`."""
    probe = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
    try:
        probe.bind((socket.VMADDR_CID_ANY, port))
    except OSError:
        return True
    finally:
        probe.close()
    return False


def free_vsock_port() -> int:
    for port in range(47000, 48000):
        if not vsock_port_taken(port):
            return port
    pytest.skip("no free vsock port")


def token(sandbox, what: str) -> str:
    return f"{TAG_PREFIX}{sandbox.terrain.tag}-{what}"


def stopped(result) -> str:
    return f"{result.stdout}{result.stderr}"


# --- TCP and UDP to the host's loopback -----------------------------------------------


@by_mode
@by_via
async def test_tcp_to_a_host_server_is_refused(sandbox, mode, via):
    name = f"network off: tcp to a host server ({mode.value}, {via})"
    with tcp_server() as (port, inbox), sandbox.battery.attempt(name):
        result = await sandbox.run(
            f"{ATTACK} tcp-send 127.0.0.1 {port} {token(sandbox, 'tcp')}"
            f"; exec 3<>/dev/tcp/127.0.0.1/{port} && echo bash-tcp >&3",
            mode,
            via=via,
        )
        assert inbox.settled() == [], stopped(result)
        assert "tcp-send: DONE" not in result.stdout


@by_mode
@by_via
async def test_udp_to_a_host_listener_never_arrives(sandbox, mode, via):
    name = f"network off: udp to a host listener ({mode.value}, {via})"
    with udp_server() as (port, inbox), sandbox.battery.attempt(name):
        result = await sandbox.run(
            f"{ATTACK} udp-send 127.0.0.1 {port} {token(sandbox, 'udp')}"
            f"; echo bash-udp > /dev/udp/127.0.0.1/{port}",
            mode,
            via=via,
        )
        assert inbox.settled() == [], stopped(result)


@as_root_only  # the judge (a packet socket on `lo`) needs CAP_NET_RAW
@by_mode
async def test_raw_and_packet_sockets_reach_nothing(sandbox, mode):
    """A raw IP socket and a packet socket on `lo`, each delivering a hand-made UDP
    datagram to the host's listener (below TCP/UDP, so below Landlock's TCP rights)."""
    marker = token(sandbox, "packet").encode()
    name = f"network off: raw and packet sockets ({mode.value})"
    with (
        udp_server() as (port, inbox),
        lo_sniffer(marker) as frames,
        sandbox.battery.attempt(name),
    ):
        result = await sandbox.run(
            f"{ATTACK} raw-udp {port} raw-{marker.decode()} -- packet-udp {port} {marker.decode()}",
            mode,
        )
        assert inbox.settled() == [], stopped(result)
        assert frames.settled(0) == [], stopped(result)
        assert "raw-udp: refused" in result.stdout and "packet-udp: refused" in result.stdout


@by_mode
async def test_netlink_shows_no_host_interface(sandbox, mode):
    """bwrap and the Landlock launcher's namespaced tier: netlink reaches only the
    command's own namespace (its `lo`); the plain tier refuses the family. Judged
    against the host's own interfaces."""
    host_links = set(os.listdir("/sys/class/net")) - {"lo"}
    with sandbox.battery.attempt(f"network off: netlink sees host interfaces ({mode.value})"):
        result = await sandbox.run("ip -o link show", mode)
        listed = {line.split(":")[1].strip().split("@")[0] for line in result.stdout.splitlines()}
        assert listed & host_links == set(), result.stdout
        if sandbox.tier == "plain":
            assert "Address family not supported" in result.stderr, result.stderr


@pytest.mark.skipif(not HAS_VSOCK, reason="no vsock on this host")
@by_mode
async def test_a_vsock_port_is_not_taken(sandbox, mode):
    """vsock ignores network namespaces (bwrap's `--unshare-net` alone leaves it): a
    listener there could be reached from the hypervisor's host. Judged by whether the
    port is held, seen from the host; nothing is connected to."""
    port = free_vsock_port()
    with sandbox.battery.attempt(f"network off: a vsock listener ({mode.value})"):
        spec = sandbox.spec(f"{ATTACK} vsock-listen {port} 3", mode)
        handle = await sandbox.executor.start(spec)
        held = False
        with trio.move_on_after(2):
            while not held:
                held = vsock_port_taken(port)
                await trio.sleep(0.05)
        result = await sandbox.executor.wait(handle.id)
        assert not held, stopped(result)
        assert "vsock-listen: refused EAFNOSUPPORT" in result.stdout, stopped(result)


async def test_io_uring_stays_refused_with_network_off(sandbox):
    """io_uring could open and connect sockets past every seccomp filter: its setup is
    refused in every mode (the setuid guard), network off included."""
    code = (
        "import ctypes, errno; l = ctypes.CDLL(None, use_errno=True); "
        "print('io_uring', l.syscall(425, 1, ctypes.create_string_buffer(120)), "
        "errno.errorcode.get(ctypes.get_errno()))"
    )
    for mode in MODES:
        with sandbox.battery.attempt(f"network off: io_uring_setup ({mode.value})"):
            result = await sandbox.run(f'{PYTHON} -I -S -c "{code}"', mode)
            assert "io_uring -1 EACCES" in result.stdout, stopped(result)


# --- named Unix sockets -----------------------------------------------------------------


async def plain_pathname_gap(sandbox, mode, what: str, **run) -> None:
    """The plain tier in workspace-write: no mount namespace to cover the host's named
    sockets, so the claim names them (`partial`); disclosed, not an attempt."""
    result = await sandbox.run("true", mode, **run)
    assert landlock.LANDLOCK_PATHNAME_GAP in result.network_gaps, result.network_gaps
    sandbox.battery.disclosed(f"{what} (plain tier, {mode.value})")


@by_mode
@by_via
async def test_a_named_socket_outside_the_roots_is_not_reached(sandbox, mode, via):
    """The host's named sockets (docker.sock grants root): read-only refuses every Unix
    socket but connected pairs; workspace-write covers each one found when the call
    starts with an empty read-only file (ECONNREFUSED), on both backends."""
    if sandbox.tier == "plain" and mode is WW:
        await plain_pathname_gap(sandbox, mode, "a named socket outside the roots")
        return
    path = sandbox.terrain.outside / "service.sock"
    dgram = sandbox.terrain.outside / "journal.sock"
    with unix_server(path) as inbox, unix_server(dgram, socket.SOCK_DGRAM) as datagrams:
        name = f"network off: a named socket outside the roots ({mode.value}, {via})"
        with sandbox.battery.attempt(name):
            result = await sandbox.run(
                f"{ATTACK} connect-send {path} {token(sandbox, 'unix')} -- "
                f"dgram-pair-send {dgram} {token(sandbox, 'dgram')}",
                mode,
                via=via,
            )
            assert inbox.settled() == [], stopped(result)
            assert datagrams.settled(0) == [], stopped(result)
            assert "connect-send: refused" in result.stdout, stopped(result)
        assert path.is_socket()  # the host's socket itself is untouched


@by_mode
async def test_a_named_socket_in_a_temp_root_is_not_reached(sandbox, mode):
    """A host service's socket inside a writable root (tmux, ssh-agent and X11 keep
    theirs in /tmp) is covered too: a command can neither reach nor remove it."""
    if sandbox.tier == "plain" and mode is WW:
        await plain_pathname_gap(sandbox, mode, "a named socket in a temp root")
        return
    directory = Path("/tmp") / sandbox.terrain.host_name("tmux")
    directory.mkdir(mode=0o700)
    path = directory / "default"
    name = f"network off: a host socket in /tmp ({mode.value})"
    try:
        with unix_server(path) as inbox, sandbox.battery.attempt(name):
            result = await sandbox.run(
                f"{ATTACK} connect-send {path} {token(sandbox, 'tmux')}; rm -f {path}", mode
            )
            assert inbox.settled() == [], stopped(result)
            assert path.is_socket(), stopped(result)
    finally:
        with contextlib.suppress(OSError):
            directory.rmdir()


@by_mode
async def test_a_socket_listed_through_a_symlink_is_covered_at_its_real_path(sandbox, mode):
    """A service that bound `/var/run/x.sock` is listed by that name; /var/run is a
    symlink to /run. The socket is covered where it really is, under both names."""
    if sandbox.tier == "plain" and mode is WW:
        await plain_pathname_gap(sandbox, mode, "a socket listed through a symlink")
        return
    real = sandbox.terrain.outside / "real-run"
    real.mkdir()
    alias = sandbox.terrain.base / "var-run"
    alias.symlink_to(real)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(alias / "svc.sock"))
    server.listen(4)
    name = f"network off: a socket listed by a symlink ({mode.value})"
    with serving(server, stream=True) as inbox, sandbox.battery.attempt(name):
        result = await sandbox.run(
            f"{ATTACK} connect-send {alias}/svc.sock a -- connect-send {real}/svc.sock b",
            mode,
        )
        assert inbox.settled() == [], stopped(result)


@by_mode
async def test_own_unix_sockets_work_in_workspace_write_only(sandbox, mode):
    """A command's own Unix socket server (a test's server, a forkserver) keeps working
    in workspace-write; read-only could not bind one anyway and refuses Unix sockets."""
    path = sandbox.terrain.root / "own.sock"
    result = await sandbox.run(f"{ATTACK} unix-self {path} mine", mode)
    if mode is WW:
        assert "unix-self: DONE mine" in result.stdout, stopped(result)
    else:
        assert "unix-self: refused EAFNOSUPPORT" in result.stdout, stopped(result)


@by_mode
async def test_a_commands_own_loopback(sandbox, mode):
    """bwrap and the Landlock launcher's namespaced tier give the command a loopback of
    its own: a server it starts there and connects to works. The plain tier (no
    namespace) refuses the family (no socket to bind)."""
    result = await sandbox.run(f"{ATTACK} loopback-self hello", mode)
    if sandbox.tier != "plain":
        assert "loopback-self: DONE hello" in result.stdout, stopped(result)
    else:
        assert "loopback-self: refused EAFNOSUPPORT" in result.stdout, stopped(result)


@by_mode
async def test_the_named_gap_a_socket_bound_after_the_call_starts(sandbox, mode):
    """What the claim names and no backend covers in workspace-write: a named socket
    the host binds after the call started (so it was not found). Read-only refuses
    Unix sockets altogether. Pinned, not counted."""
    if sandbox.tier == "plain" and mode is WW:
        await plain_pathname_gap(sandbox, mode, "a socket bound after the call starts")
        return
    path = sandbox.terrain.outside / "late.sock"
    command = (
        f"for i in $(seq 100); do [ -S {path} ] && break; sleep 0.05; done; "
        f"{ATTACK} connect-send {path} late"
    )
    handle = await sandbox.executor.start(sandbox.spec(command, mode))
    await trio.sleep(0.3)
    with unix_server(path) as inbox:
        report = await sandbox.executor.wait(handle.id)
        received = inbox.settled(expect=1 if mode is WW else 0)
    assert report.network_enforcement is (Enforcement.PARTIAL if mode is WW else Enforcement.FULL)
    if mode is WW:
        assert _profiles.UNFOUND_SOCKETS_GAP in report.network_gaps
        assert received == [b"late\n"], stopped(report)
        sandbox.battery.disclosed(f"network off: a socket bound after the call ({mode.value})")
    else:
        assert received == [], stopped(report)


NETNS_SERVER = """
import socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(4)
print('ready', flush=True)
while True:
    c, _ = s.accept()
    with open(sys.argv[2], 'ab') as out: out.write(c.recv(64))
    c.close()
"""


@contextlib.contextmanager
def mounted_from_another_netns(original: Path, mounted: Path, got: Path) -> Iterator[None]:
    """A server on `original` bound in a network namespace of its own (so missing from
    this one's /proc/net/unix), bind-mounted onto `mounted` as a container runtime
    mounts docker.sock; what it receives goes to `got`."""
    process = subprocess.Popen(
        ["unshare", "--net", PYTHON, "-I", "-c", NETNS_SERVER, str(original), str(got)],
        stdout=subprocess.PIPE,
        text=True,
    )
    mounted.write_text("")
    try:
        assert process.stdout is not None and process.stdout.readline() == "ready\n"
        assert str(original) not in Path("/proc/net/unix").read_text()
        subprocess.run(["mount", "--bind", str(original), str(mounted)], check=True)
        try:
            yield
        finally:
            subprocess.run(["umount", str(mounted)], check=True)
    finally:
        process.kill()
        process.wait()


async def _file_settled(path: Path, until: str | None, seconds: float = 0.3) -> str:
    """`path`'s text after `seconds`, and once it holds `until` (or 10 s passed): a
    loaded host's server may take longer than `seconds` to accept and write."""
    await trio.sleep(seconds)
    with trio.move_on_after(10):
        while until is not None and until not in (path.read_text() if path.exists() else ""):
            await trio.sleep(0.02)
    return path.read_text() if path.exists() else ""


@as_root_only
@by_mode
async def test_a_socket_from_another_network_namespace(sandbox, mode):
    """A socket bound in another network namespace is missing from this one's
    /proc/net/unix. Mounted in as a file (how docker.sock reaches a container) it is
    found among the mount points and covered; at its own path it is the named gap in
    workspace-write (pinned), refused in read-only."""
    if sandbox.tier == "plain" and mode is WW:
        await plain_pathname_gap(sandbox, mode, "a socket from another network namespace")
        return
    terrain = sandbox.terrain
    original, mounted = terrain.outside / "elsewhere.sock", terrain.outside / "mounted.sock"
    got = terrain.base / "elsewhere.got"
    with mounted_from_another_netns(original, mounted, got):
        with sandbox.battery.attempt(f"network off: a socket mounted in ({mode.value})"):
            result = await sandbox.run(
                f"{ATTACK} connect-send {mounted} via-mount -- connect-send {original} via-path",
                mode,
            )
            # The server writes after its accept: wait for the delivery that must come
            # (workspace-write's via-path, sent after via-mount, so via-mount would be
            # in first), else a moment for one that must not.
            text = await _file_settled(got, until="via-path" if mode is WW else None)
            assert "via-mount" not in text, stopped(result)
        if mode is WW:
            assert text == "via-path\n", stopped(result)
            assert _profiles.UNFOUND_SOCKETS_GAP in result.network_gaps
            sandbox.battery.disclosed("network off: a socket of another network namespace")
        else:
            assert text == "", stopped(result)


# --- abstract Unix sockets --------------------------------------------------------------


@by_mode
async def test_a_host_abstract_socket_is_not_reached_with_network_off(sandbox, mode):
    name = sandbox.terrain.host_name("abstract-off")
    server = socket.socket(socket.AF_UNIX)
    server.bind(b"\0" + name.encode())
    server.listen(4)
    attempt = sandbox.battery.attempt(f"network off: a host abstract socket ({mode.value})")
    with serving(server, stream=True) as inbox, attempt:
        result = await sandbox.run(f"{ATTACK} abstract-connect {name} hello", mode)
        assert inbox.settled() == [], stopped(result)


# --- network on: the same servers are reached ------------------------------------------


@by_mode
async def test_network_on_reaches_the_same_host_servers(sandbox, mode):
    """`on` is today's behaviour: the host's TCP server, UDP listener and a named socket
    outside the roots are reached; the claim says nothing about the network."""
    path = sandbox.terrain.outside / "on.sock"
    with (
        tcp_server() as (tcp_port, tcp),
        udp_server() as (udp_port, udp),
        unix_server(path) as unix,
    ):
        result = await sandbox.run(
            f"{ATTACK} tcp-send 127.0.0.1 {tcp_port} t -- udp-send 127.0.0.1 {udp_port} u -- "
            f"connect-send {path} n",
            mode,
            network=ON,
        )
        assert tcp.settled(expect=1) == [b"t\n"], stopped(result)
        assert udp.settled(0, expect=1) == [b"u\n"], stopped(result)
        assert unix.settled(0, expect=1) == [b"n\n"], stopped(result)
    assert not any("unix sockets" in gap and "not found" in gap for gap in result.gaps)


# --- controls: each attack reaches the host when nothing confines it --------------------


@as_root_only
def test_control_every_network_attack_reaches_the_host_unconfined(terrain):
    path = terrain.outside / "control.sock"
    dgram = terrain.outside / "control-dgram.sock"
    marker = f"{TAG_PREFIX}{terrain.tag}-control".encode()
    with (
        tcp_server() as (tcp_port, tcp),
        udp_server() as (udp_port, udp),
        unix_server(path) as unix,
        unix_server(dgram, socket.SOCK_DGRAM) as datagrams,
        lo_sniffer(marker) as frames,
    ):
        argv = [
            PYTHON, "-I", "-S", ATTACKS,
            "tcp-send", "127.0.0.1", str(tcp_port), "t", "--",
            "udp-send", "127.0.0.1", str(udp_port), "u", "--",
            "raw-udp", str(udp_port), "r", "--",
            "packet-udp", "9", marker.decode(), "--",
            "connect-send", str(path), "n", "--",
            "dgram-pair-send", str(dgram), "d",
        ]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20)
        assert tcp.settled(expect=1) == [b"t\n"], done.stdout
        assert sorted(udp.settled(0, expect=2)) == [b"r\n", b"u\n"], done.stdout
        assert unix.settled(0, expect=1) == [b"n\n"], done.stdout
        assert datagrams.settled(0, expect=1) == [b"d\n"], done.stdout
        assert frames.settled(0, expect=1), done.stdout
    if HAS_VSOCK:
        port = free_vsock_port()
        holder = subprocess.Popen([PYTHON, "-I", "-S", ATTACKS, "vsock-listen", str(port), "2"])
        try:
            deadline = time.monotonic() + 2
            while not vsock_port_taken(port) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert vsock_port_taken(port)
        finally:
            holder.kill()
            holder.wait()
    # A private network namespace alone does not stop a named socket (FACTS.md).
    with unix_server(terrain.outside / "netns.sock") as unix:
        subprocess.run(
            [
                "unshare",
                "--net",
                *argv[:4],
                "connect-send",
                str(terrain.outside / "netns.sock"),
                "x",
            ],
            check=True,
            timeout=20,
        )
        assert unix.settled(expect=1) == [b"x\n"]


# --- as an unprivileged caller ---------------------------------------------------------


@as_root_only
@by_mode
@pytest.mark.skipif(not os.access(SYSTEM_PYTHON, os.X_OK), reason="needs the system python")
async def test_nobody_reaches_no_host_server(sandbox, runner, nobody_terrain, mode, nobody_attack):  # noqa: F811
    path = nobody_terrain.outside / "nobody.sock"
    with (
        tcp_server() as (tcp_port, tcp),
        udp_server() as (udp_port, udp),
        unix_server(path) as unix,
    ):
        os.chmod(path, 0o777)  # nobody may connect when nothing confines it
        command = (
            f"{nobody_attack} tcp-send 127.0.0.1 {tcp_port} t -- "
            f"udp-send 127.0.0.1 {udp_port} u -- connect-send {path} n"
        )
        with sandbox.battery.attempt(f"as nobody: network off ({mode.value})"):
            done = await confined_as_nobody(sandbox, runner, mode, command)
            out = done.stdout.decode() + done.stderr.decode()
            assert tcp.settled() == [], out
            assert udp.settled(0) == [], out
            if not (sandbox.tier == "plain" and mode is WW):
                assert unix.settled(0) == [], out
            assert "tcp-send: refused" in out, out
        if sandbox.tier == "plain" and mode is WW:
            # The host's named sockets: the plain tier's named gap.
            await plain_pathname_gap(sandbox, mode, "as nobody: a named socket")


@as_root_only
def test_control_nobody_reaches_the_host_servers(terrain, nobody_attack):
    path = terrain.outside / "nobody-control.sock"
    os.chmod(terrain.outside, 0o755)
    with tcp_server() as (tcp_port, tcp), unix_server(path) as unix:
        os.chmod(path, 0o777)
        done = subprocess.run(
            [*nobody_attack.split(), "tcp-send", "127.0.0.1", str(tcp_port), "t",
             "--", "connect-send", str(path), "n"],
            capture_output=True, text=True, timeout=20, user=65534, group=65534,
            extra_groups=[], cwd="/",
        )  # fmt: skip
        assert tcp.settled(expect=1) == [b"t\n"], done.stdout + done.stderr
        assert unix.settled(0, expect=1) == [b"n\n"], done.stdout + done.stderr


# --- the command line --------------------------------------------------------------------


def _stockade(*args: str, cwd: Path) -> subprocess.Popen[str]:
    env = {key: value for key, value in os.environ.items() if key != "STOCKADE_CONFIG"}
    return subprocess.Popen(
        [sys.executable, "-m", "stockade", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("backend_name", ["bwrap", "landlock"])
def test_stockade_exec_network_off_and_on(backend_name, terrain):
    require_backend(backend_name)
    with tcp_server() as (port, inbox):
        for network in ("off", "on"):
            process = _stockade(
                "exec", "--backend", backend_name, "--network", network, "--root",
                str(terrain.root), "--", PYTHON, "-I", "-S", ATTACKS,
                "tcp-send", "127.0.0.1", str(port), network,
                cwd=terrain.root,
            )  # fmt: skip
            out, err = process.communicate(timeout=60)
            assert process.returncode == 0, err
            received = inbox.settled(expect=0 if network == "off" else 1)
            if network == "off":
                assert received == [], out + err
                assert "tcp-send: refused" in out, out + err
            else:
                assert b"on\n" in received, out + err


def test_concurrent_runs_report_the_network_the_host_saw(terrain):
    """24 `stockade run --json` at once, mixed backend, mode and network: each tries to
    reach the host's TCP server with its own token; its JSON `network` and whether the
    server saw that token must agree, every time."""
    backends = [name for name in ("bwrap", "landlock") if _usable(name)]
    if not backends:
        pytest.skip("no real backend here")
    with tcp_server() as (port, inbox):
        runs = []
        for index in range(24):
            backend = backends[index % len(backends)]
            mode = (RO, WW)[(index // 2) % 2]
            network = ("off", "on")[(index // 4) % 2]
            tag = f"run-{index}"
            command = f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo {tag} >&3"
            process = _stockade(
                "run", "--json", "--backend", backend, "--mode", mode.value,
                "--network", network, "--root", str(terrain.root), command,
                cwd=terrain.root,
            )  # fmt: skip
            runs.append((tag, backend, mode, network, process))
        facts = []
        for tag, backend, mode, network, process in runs:
            out, err = process.communicate(timeout=120)
            assert process.returncode in (0, 1), out + err
            facts.append((tag, backend, mode, network, json.loads(out)))
        reaching = sum(1 for run in runs if run[3] == "on")  # one connection each
        seen = {line for item in inbox.settled(0.5, reaching) for line in item.decode().split()}
    for tag, backend, mode, network, reported in facts:
        assert (reported["backend"], reported["mode"]) == (backend, mode.value), reported
        assert reported["network"] == network, reported
        assert (tag in seen) == (network == "on"), (tag, reported)
        if network == "off" and mode is WW:
            assert reported["network_enforcement"] == "partial", reported


def _usable(name: str) -> bool:
    try:
        require_backend(name)
    except pytest.skip.Exception:
        return False
    return True
