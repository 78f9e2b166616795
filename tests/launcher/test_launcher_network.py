# ruff: noqa: F811 (the `launcher` fixture comes from test_launcher.py)
"""The launcher's network options, on the real kernel: --no-network, --netns-only,
--unix-pairs-only, and --hide-socket/--empty (docs/security.md, "Network").

Built from source by the `launcher` fixture of test_launcher.py (cc and musl-gcc).
"""

import errno
import json
import os
import shutil
import socket
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from ..support import host_mount_table
from .test_launcher import (
    IS_ROOT,
    NOBODY,
    PYTHON,
    READ_ONLY,
    assert_launcher_failure,
    landlock_abi,
    launcher,  # noqa: F401
    run,
)

pytestmark = [pytest.mark.kernel, pytest.mark.nobody]
EMPTY = Path(__file__).resolve().parents[2] / "src" / "stockade" / "_data" / "empty"

FAMILIES = r"""
import errno, json, socket
def attempt(make):
    try:
        made = make()
    except OSError as e:
        return errno.errorcode[e.errno]
    for s in made if isinstance(made, tuple) else (made,):
        s.close()
    return "OK"
U, NB, CX = socket.AF_UNIX, socket.SOCK_NONBLOCK, socket.SOCK_CLOEXEC
print(json.dumps({
    "inet": attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM)),
    "inet6-udp": attempt(lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)),
    "netlink": attempt(lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)),
    "packet": attempt(lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)),
    "vsock": attempt(lambda: socket.socket(40, socket.SOCK_STREAM)),
    "unix": attempt(lambda: socket.socket(U, socket.SOCK_STREAM)),
    "unix-dgram": attempt(lambda: socket.socket(U, socket.SOCK_DGRAM)),
    "pair": attempt(lambda: socket.socketpair(U, socket.SOCK_STREAM)),
    "pair-seqpacket": attempt(lambda: socket.socketpair(U, socket.SOCK_SEQPACKET | CX)),
    "pair-dgram": attempt(lambda: socket.socketpair(U, socket.SOCK_DGRAM)),
    "pair-dgram-flags": attempt(lambda: socket.socketpair(U, socket.SOCK_DGRAM | NB | CX)),
}))
"""
NO = "EAFNOSUPPORT"
ALL_OK = {
    "inet": "OK",
    "inet6-udp": "OK",
    "netlink": "OK",
    "unix": "OK",
    "unix-dgram": "OK",
    "pair": "OK",
    "pair-seqpacket": "OK",
    "pair-dgram": "OK",
    "pair-dgram-flags": "OK",
}


def families(launcher, *flags):
    result = run(launcher, *flags, "--", *PYTHON, "-c", FAMILIES)
    assert result.returncode == 0, result
    out = json.loads(result.stdout)
    # Without a capability a packet socket is EPERM anyway; vsock may be missing.
    packet, vsock = out.pop("packet"), out.pop("vsock")
    return out, packet, vsock


def test_without_network_options_every_family_is_as_before(launcher):
    out, packet, _ = families(launcher, *READ_ONLY)
    assert out == ALL_OK
    assert packet == "EPERM"  # the launcher dropped CAP_NET_RAW


@pytest.mark.parametrize("mode", [READ_ONLY, ["--filters-only"]], ids=["run", "filters-only"])
def test_no_network_leaves_only_unix_sockets(launcher, mode):
    out, packet, vsock = families(launcher, *mode, "--no-network")
    assert out == {**ALL_OK, "inet": NO, "inet6-udp": NO, "netlink": NO}
    assert packet == NO and vsock == NO


def test_netns_only_keeps_what_a_network_namespace_isolates(launcher):
    out, packet, vsock = families(launcher, "--filters-only", "--netns-only")
    assert out == ALL_OK
    assert packet == NO and vsock == NO


@pytest.mark.parametrize(
    "flags",
    [[*READ_ONLY, "--no-network"], ["--filters-only", "--netns-only"]],
    ids=["no-network", "netns-only"],
)
def test_unix_pairs_only_leaves_no_unix_socket_that_can_name_another(launcher, flags):
    """Not even an AF_UNIX socket(), and no datagram pair (sendmsg could name a socket
    from one); stream and seqpacket pairs stay."""
    out, _, _ = families(launcher, *flags, "--unix-pairs-only")
    assert out["unix"] == NO and out["unix-dgram"] == NO
    assert out["pair-dgram"] == NO and out["pair-dgram-flags"] == NO
    assert out["pair"] == "OK" and out["pair-seqpacket"] == "OK"


def test_the_refusal_is_not_a_file_denial(launcher):
    """EAFNOSUPPORT: the shell's text is never Landlock's "Permission denied", which
    would mark the call denied and offer a wider mode (which brings no network)."""
    result = run(
        launcher, *READ_ONLY, "--no-network", "--", "bash", "-c", "echo x > /dev/tcp/127.0.0.1/9"
    )
    assert "Address family not supported by protocol" in result.stderr, result
    assert "Permission denied" not in result.stderr


INHERITED = r"""
import errno, socket, sys
s = socket.socket(fileno=int(sys.argv[1]))
def attempt(call, *args):
    try:
        call(*args)
        return "OK"
    except OSError as e:
        return errno.errorcode[e.errno]
print(attempt(s.connect, ("127.0.0.1", int(sys.argv[2]))))
"""


@pytest.mark.skipif(landlock_abi() < 4, reason="Landlock governs TCP from ABI 4")
def test_landlock_refuses_tcp_even_on_an_inherited_socket(launcher):
    """Behind the filter (which refuses making a socket), the ruleset handles TCP
    connect and bind with no port allowed: a socket passed in is refused too."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]
    try:
        for flags, expected in (([], "OK"), (["--no-network"], "EACCES")):
            client = socket.socket()
            try:
                result = subprocess.run(
                    [str(launcher), *READ_ONLY, *flags, "--", *PYTHON, "-c", INHERITED,
                     str(client.fileno()), str(port)],
                    capture_output=True, text=True, timeout=10, pass_fds=[client.fileno()],
                )  # fmt: skip
            finally:
                client.close()
            assert result.stdout.strip() == expected, (flags, result)
    finally:
        server.close()


@pytest.mark.parametrize(
    "args, mention",
    [
        ([*READ_ONLY, "--netns-only", "--", "true"], "--netns-only needs --filters-only"),
        ([*READ_ONLY, "--unix-pairs-only", "--", "true"], "--unix-pairs-only needs"),
        (["--filters-only", "--unix-pairs-only", "--", "true"], "--unix-pairs-only needs"),
        (["--filters-only", "--no-network", "--netns-only", "--", "true"], "exclude each other"),
        ([*READ_ONLY, "--hide-socket", "/x", "--", "true"], "--hide-socket needs --empty"),
        ([*READ_ONLY, "--hide-socket"], "--hide-socket needs a path"),
        (["--filters-only", "--empty"], "--empty needs a path"),
    ],
)
def test_network_options_are_checked(launcher, args, mention):
    assert_launcher_failure(run(launcher, *args), mention)


# ---- hiding named sockets ----

CONNECT = r"""
import errno, json, socket, sys
out = {}
for path in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(path)
        out[path] = "connected"
    except OSError as e:
        out[path] = errno.errorcode[e.errno]
    try:
        open(path, "w")
        out[path] += "+WRITABLE"
    except OSError:
        pass
print(json.dumps(out))
"""


@pytest.fixture
def public():
    """A directory (and ancestors) that the nobody user can traverse."""
    path = Path(tempfile.mkdtemp(prefix="stockade-launcher-net-", dir="/var/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


@pytest.fixture
def services(public):
    """Two listening sockets anyone may reach, and a path that is gone."""
    made = []
    for name in ("hidden.sock", "other.sock"):
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(public / name))
        server.listen(4)
        (public / name).chmod(0o777)
        made.append(server)
    yield public / "hidden.sock", public / "other.sock", public / "gone.sock"
    for server in made:
        server.close()


def hiding(hidden, gone):
    return ["--empty", str(EMPTY), "--hide-socket", str(hidden), "--hide-socket", str(gone)]


def mounts(*own: Path) -> list[str]:
    return host_mount_table(*own)


@pytest.mark.parametrize(
    "flags",
    [
        [*READ_ONLY, "--private-ipc", "--no-network"],
        [*READ_ONLY, "--no-network"],
        ["--filters-only", "--no-network"],
    ],
    ids=["private-ipc", "no-private-ipc", "filters-only"],
)
def test_a_hidden_socket_is_covered_in_the_commands_own_mount_namespace(launcher, services, flags):
    hidden, other, gone = services
    before = mounts(hidden.parent, gone.parent)
    result = run(
        launcher, *flags, *hiding(hidden, gone), "--", *PYTHON, "-c", CONNECT, hidden, other
    )
    assert result.returncode == 0, result
    out = json.loads(result.stdout)
    # A regular, read-only file where the socket was; a socket not listed is reached
    # (the launcher hides what it is told to), one that is gone is skipped.
    assert out == {str(hidden): "ECONNREFUSED", str(other): "connected"}
    assert hidden.is_socket()
    assert mounts(hidden.parent, gone.parent) == before  # nothing changed on the host


def test_hiding_leaves_no_capability(launcher, services):
    """In a runner's namespace the launcher holds CAP_SYS_ADMIN to mount with: every
    capability is gone before the command runs."""
    hidden, _, gone = services
    result = run(
        launcher, "--filters-only", "--no-network", *hiding(hidden, gone), "--",
        "cat", "/proc/self/status",
    )  # fmt: skip
    fields = dict(line.split(":\t", 1) for line in result.stdout.splitlines() if ":\t" in line)
    for field in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(fields[field], 16) == 0, (field, fields[field])
    assert fields["NoNewPrivs"].strip() == "1"


def test_a_path_that_is_not_a_socket_is_left_alone(launcher, tmp_path):
    """Only a socket is covered: a path replaced by a file or a directory meanwhile is
    not a socket to hide any more."""
    plain = tmp_path / "plain"
    plain.write_text("data\n")
    result = run(
        launcher, *READ_ONLY, "--private-ipc", "--empty", str(EMPTY), "--hide-socket",
        str(plain), "--hide-socket", str(tmp_path), "--", "cat", str(plain),
    )  # fmt: skip
    assert result.stdout == "data\n", result


def test_a_symlink_on_the_way_fails_closed(launcher, services, tmp_path):
    """The caller passes real paths; a symlink there now means the path was swapped:
    the launcher refuses rather than cover whatever the link leads to."""
    hidden, _, _ = services
    link = tmp_path / "link"
    link.symlink_to(hidden.parent)
    result = run(
        launcher, *READ_ONLY, "--private-ipc", "--empty", str(EMPTY), "--hide-socket",
        str(link / hidden.name), "--", "true",
    )  # fmt: skip
    assert_launcher_failure(result, "cannot hide the socket", str(link / hidden.name))


@pytest.mark.skipif(not IS_ROOT, reason="needs a root caller to act as nobody")
def test_an_unprivileged_caller_hides_through_a_user_namespace(launcher, services, public):
    hidden, other, gone = services
    copy = public / "landlock-run"
    shutil.copy2(launcher, copy)
    copy.chmod(0o755)
    empty = public / "empty"
    empty.write_text("")
    empty.chmod(0o644)
    system_python = "/usr/bin/python3"
    if not os.access(system_python, os.X_OK):
        pytest.skip("needs the system python to act as nobody")
    result = subprocess.run(
        [str(copy), *READ_ONLY, "--private-ipc", "--no-network", "--empty", str(empty),
         "--hide-socket", str(hidden), "--hide-socket", str(gone), "--",
         system_python, "-I", "-c", CONNECT, str(hidden), str(other)],
        capture_output=True, text=True, timeout=10, user=NOBODY, group=NOBODY,
        extra_groups=[], cwd="/",
    )  # fmt: skip
    assert result.returncode == 0, result
    out = json.loads(result.stdout)
    # The empty file is root's 0644: not writable for nobody, so connect() meets EACCES
    # before it could find it is not a socket. Either way nothing is reached.
    assert out[str(hidden)] in ("ECONNREFUSED", "EACCES") and out[str(other)] == "connected"
    assert stat.S_ISSOCK(os.lstat(hidden).st_mode)


def test_the_empty_file_is_never_writable_through_a_hidden_path(launcher, tmp_path):
    """Landlock judges a write by the path it is made through: a hidden socket inside a
    writable grant must not make the (shared) empty file writable there."""
    grant = tmp_path / "grant"
    grant.mkdir()
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(grant / "s.sock"))
    source = tmp_path / "empty-source"
    source.write_text("")
    try:
        result = run(
            launcher, "--ro", "/", "--rw", "/dev/null", "--rw", grant, "--private-ipc",
            "--no-network", "--empty", source, "--hide-socket", grant / "s.sock", "--",
            "sh", "-c", f"echo pwned > {grant}/s.sock",
        )  # fmt: skip
        assert "Read-only file system" in result.stderr, result
        assert source.read_text() == ""
    finally:
        server.close()


def test_connect_to_a_regular_file_is_refused():
    """The kernel fact hiding rests on: connect() to a path that is not a socket."""
    s = socket.socket(socket.AF_UNIX)
    with pytest.raises(OSError) as refused:
        s.connect(str(EMPTY))
    s.close()
    assert refused.value.errno in (errno.ECONNREFUSED, errno.EACCES)
