# ruff: noqa: F811 (the `launcher` fixture comes from test_launcher.py)
"""The launcher's fresh runtime directories (`--fresh-dir`, `--keep`, `--bind-socket`):
in the call's mount namespace a directory becomes an empty read-only tmpfs, with what
the call keeps bound back inside it and agent sockets bound at their view paths, so a
socket a host daemon binds there after the call started is out of reach."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

from .test_launcher import (
    IS_ROOT,
    NOBODY,
    PYTHON,
    READ_ONLY,
    assert_launcher_failure,
    launcher,  # noqa: F401
    run,
)

pytestmark = [pytest.mark.kernel, pytest.mark.nobody]
NAMESPACED = [*READ_ONLY, "--private-ipc", "--private-network", "--read-only-host"]

# Waits for `marker` (in a kept directory), then connects to each socket path.
CLIENT = r"""
import errno, json, os, socket, sys, time
marker, paths = sys.argv[1], sys.argv[2:]
for _ in range(500):
    if os.path.exists(marker):
        break
    time.sleep(0.02)
out = {}
for path in paths:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(path)
        s.sendall(b"x")
        out[path] = "connected"
    except OSError as e:
        out[path] = errno.errorcode[e.errno]
print(json.dumps(out))
"""


class Received(list[bytes]):
    """What connections sent, filled by the server's thread."""

    def settled(self, expected: int) -> list[bytes]:
        """What was received once `expected` connections have been read (or after 5 s):
        the client's process may have exited before the thread accepted its connection."""
        for _ in range(250):
            if len(self) >= expected:
                break
            time.sleep(0.02)
        return list(self)


@contextlib.contextmanager
def listening(path: Path):
    """A Unix server at `path`; yields what its connections sent."""
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(8)
    server.settimeout(0.05)
    got = Received()
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with connection:
                connection.settimeout(2)
                with contextlib.suppress(OSError):
                    got.append(connection.recv(64))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield got
    finally:
        stop.set()
        thread.join(5)
        server.close()
        with contextlib.suppress(OSError):
            path.unlink()


@pytest.fixture
def kept(tmp_path):
    """A directory in the host's /tmp (pytest's), which the call keeps in sight."""
    assert str(tmp_path).startswith("/tmp/")
    return tmp_path


def test_a_socket_bound_after_the_call_starts_is_not_reached(launcher, kept):
    """Bound in /run and /tmp after the command started: neither is reached through the
    fresh views; the kept directory (beneath /tmp) is still there and writable."""
    tag = uuid.uuid4().hex[:10]
    late = [Path(f"/run/stockade-fresh-{tag}.sock"), Path(f"/tmp/stockade-fresh-{tag}.sock")]
    marker = kept / "go"
    process = subprocess.Popen(
        [str(launcher), *NAMESPACED, "--rw", str(kept), "--fresh-dir", "/run", "--fresh-dir",
         "/tmp", "--keep", str(kept), "--", "sh", "-c",
         f'"$0" -I -B -c "$1" {marker} {late[0]} {late[1]} && echo kept > {kept}/written'
         f' && ls -A /tmp && ls -A /run',
         PYTHON[0], CLIENT],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        with listening(late[0]) as in_run, listening(late[1]) as in_tmp:
            marker.write_text("")
            out, err = process.communicate(timeout=20)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 0, err
    lines = out.splitlines()
    verdict = json.loads(lines[0])
    assert verdict == {str(late[0]): "ENOENT", str(late[1]): "ENOENT"}
    assert in_run == [] and in_tmp == []
    assert (kept / "written").read_text() == "kept\n"
    # /tmp shows only the way to the kept directory; /run shows nothing.
    assert lines[1:] == [kept.relative_to("/tmp").parts[0]]


def test_the_fresh_view_is_read_only_and_leaves_the_host_alone(launcher, kept):
    name = f"stockade-fresh-{uuid.uuid4().hex[:10]}"
    result = run(
        launcher, *NAMESPACED, "--fresh-dir", "/tmp", "--keep", str(kept), "--",
        "sh", "-c", f"touch /tmp/{name}; mkdir /tmp/{name}.d; echo $?",
    )  # fmt: skip
    assert result.returncode == 0, result
    assert "Read-only file system" in result.stderr
    assert not os.path.exists(f"/tmp/{name}") and not os.path.exists(f"/tmp/{name}.d")
    assert kept.is_dir()


def test_an_agent_socket_is_bound_at_its_view_path(launcher, kept):
    """The host's socket (in the kept directory here, outside the view's directory) is
    reached at its view path inside the fresh /run; a sibling in /run is not."""
    tag = uuid.uuid4().hex[:10]
    agent, sibling = kept / "agent.sock", Path(f"/run/stockade-fresh-{tag}-sibling.sock")
    view = f"/run/stockade-agent-{tag}/ssh.sock"
    with listening(agent) as to_agent, listening(sibling) as to_sibling:
        result = run(
            launcher, *NAMESPACED, "--fresh-dir", "/run", "--bind-socket", agent, view,
            "--", *PYTHON, "-c", CLIENT, "/", view, sibling,
        )  # fmt: skip
        assert result.returncode == 0, result
        assert json.loads(result.stdout) == {view: "connected", str(sibling): "ENOENT"}
        assert to_agent.settled(1) == [b"x"] and to_sibling == []
    assert not os.path.exists(os.path.dirname(view))


def test_a_socket_outside_every_fresh_view_is_bound_over_the_one_in_sight(launcher, kept):
    """A gpg-agent's restricted socket put where gpg looks for the full one: with no
    fresh view at all, the command reaching the view path reaches the bound socket;
    the control, without the bind, reaches the socket that is there."""
    restricted, full = kept / "S.agent.extra", kept / "S.agent"
    with listening(restricted) as to_restricted, listening(full) as to_full:
        control = run(launcher, *NAMESPACED, "--", *PYTHON, "-c", CLIENT, "/", full)
        assert control.returncode == 0, control
        assert to_full.settled(1) == [b"x"] and to_restricted == []
        to_full.clear()
        result = run(
            launcher, *NAMESPACED, "--bind-socket", restricted, full,
            "--", *PYTHON, "-c", CLIENT, "/", full,
        )  # fmt: skip
        assert result.returncode == 0, result
        assert json.loads(result.stdout) == {str(full): "connected"}
        assert to_restricted.settled(1) == [b"x"] and to_full == []
    assert not full.exists() and not restricted.exists()


def test_a_socket_is_bound_over_nothing_but_a_socket(launcher, kept):
    """Beneath no fresh view, the view must be a socket in sight: never a file."""
    target = kept / "file"
    target.write_text("kept\n")
    with listening(kept / "agent") as _:
        result = run(launcher, *NAMESPACED, "--bind-socket", kept / "agent", target, "--", "true")
    assert_launcher_failure(result, "is no socket to bind over")
    assert target.read_text() == "kept\n"


def test_the_proxy_socket_kept_in_a_fresh_directory_still_carries_the_bridge(launcher, kept):
    """Network allowlist: the bridge reaches the proxy's socket through the fresh /tmp
    where the call keeps it."""
    proxy = kept / "proxy.sock"
    port = 18123
    send = (
        f"import socket; s = socket.create_connection(('127.0.0.1', {port})); "
        "s.sendall(b'through'); s.close()"
    )
    with listening(proxy) as got:
        result = run(
            launcher, *NAMESPACED, "--proxy-bridge", f"{port}:{proxy}", "--fresh-dir", "/tmp",
            "--keep", proxy, "--", *PYTHON, "-c", send,
        )  # fmt: skip
        assert result.returncode == 0, result
        assert got.settled(1) == [b"through"]


@pytest.mark.skipif(not IS_ROOT, reason="needs a root caller to act as nobody")
def test_an_unprivileged_caller_gets_fresh_views_through_a_user_namespace(launcher, tmp_path):
    copy = Path("/var/tmp") / f"landlock-run-fresh-{uuid.uuid4().hex[:8]}"
    copy.write_bytes(Path(launcher).read_bytes())
    copy.chmod(0o755)
    try:
        result = subprocess.run(
            [str(copy), *NAMESPACED, "--fresh-dir", "/tmp", "--fresh-dir", "/run", "--",
             "sh", "-c", "ls -A /tmp /run; touch /tmp/x"],
            capture_output=True, text=True, timeout=10, user=NOBODY, group=NOBODY,
            extra_groups=[], cwd="/",
        )  # fmt: skip
    finally:
        copy.unlink()
    assert result.returncode != 0 and "Read-only file system" in result.stderr, result
    assert result.stdout.split() == ["/run:", "/tmp:"], result


@pytest.mark.parametrize(
    "args, mention",
    [
        (["--plain", "--ro", "/", "--fresh-dir", "/tmp"], "--plain makes no mount namespace"),
        ([*NAMESPACED, "--fresh-dir", "/run", "--fresh-dir", "/run/user"], "lies beneath"),
        ([*NAMESPACED, "--fresh-dir", "/tmp", "--keep", "/"], "lies at or beneath --keep"),
        ([*NAMESPACED, "--bind-socket", "/dev/null", "/run/x"], "is no socket"),
        ([*NAMESPACED, "--fresh-dir", "/run", "--bind-socket", "/dev/null", "/run/x"],
         "is no socket"),
        ([*NAMESPACED, "--fresh-dir", "/run", "--fresh-dir", "/tmp", "--keep", "/tmp/k",
          "--bind-socket", "/dev/null", "/tmp/k/x"], "beneath --keep"),
        ([*NAMESPACED, "--fresh-dir", "relative"], "absolute"),
        (["--filters-only", "--fresh-dir", "/tmp"], "--filters-only takes only"),
    ],
)  # fmt: skip
def test_fresh_options_are_checked(launcher, args, mention):
    assert_launcher_failure(run(launcher, *args, "--", "true"), mention)
