"""The launcher's tiers (issue 36): the plain tier's guardian ends every process a
call leaves, its grants, its network; the namespaced tier's read-only host, binds and
loopback. The launcher is compiled here, as in test_launcher.py."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from .test_launcher import NOBODY, assert_launcher_failure, launcher, run  # noqa: F401

pytestmark = [pytest.mark.kernel, pytest.mark.nobody]


def _alive(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(entry))
    return found


def test_the_plain_tier_ends_every_process_the_command_leaves(launcher, tmp_path):  # noqa: F811
    """A setsid survivor and a double fork, both out of the command's process group,
    are ended with the call; the command's own status is the launcher's."""
    marker = f"stockade-plain-survivor-{os.getpid()}"
    script = (
        f"(setsid bash -c 'exec -a {marker} sleep 30' &); "
        f"(bash -c '(exec -a {marker} sleep 30 &) ' &); sleep 0.2; exit 7"
    )
    done = run(launcher, "--plain", "--ro", "/", "--rw", tmp_path, "--", "bash", "-c", script)
    assert done.returncode == 7, done
    time.sleep(0.2)
    assert _alive(marker) == [], "a process outlived its call"
    # The control: unconfined, the same script leaves them running.
    subprocess.run(["bash", "-c", script], check=False)
    time.sleep(0.3)
    left = _alive(marker)
    assert left, "the control left nothing: the attack is not real"
    for pid in left:
        os.kill(pid, 9)


def test_the_plain_tier_ends_them_when_the_launcher_is_killed(launcher, tmp_path):  # noqa: F811
    marker = f"stockade-plain-killed-{os.getpid()}"
    process = subprocess.Popen(
        [str(launcher), "--plain", "--ro", "/", "--rw", str(tmp_path), "--", "bash", "-c",
         f"(setsid bash -c 'exec -a {marker} sleep 30' &); sleep 30"],
        start_new_session=True,
    )  # fmt: skip
    time.sleep(0.5)
    assert _alive(marker), "the survivor never started"
    os.killpg(process.pid, 9)  # the launcher's group, as the executor kills a call
    process.wait()
    deadline = time.monotonic() + 5
    while _alive(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _alive(marker) == [], "a process outlived its killed call"


def test_the_plain_tier_keeps_host_processes_unsignallable(launcher, tmp_path):  # noqa: F811
    victim = subprocess.Popen(["sleep", "30"])
    try:
        done = run(launcher, "--plain", "--ro", "/", "--", "sh", "-c", f"kill -9 {victim.pid}")
        assert done.returncode != 0
        assert victim.poll() is None, "a host process was killed"
    finally:
        victim.kill()


def test_the_plain_tier_network_off_and_its_bridge_port(launcher, tmp_path):  # noqa: F811
    """Network off: no inet socket. With a bridge: the proxy variables name the port
    the launcher chose, the one TCP port Landlock allows; UDP stays refused."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    proxy = tmp_path / "proxy.sock"
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(proxy))
    unix.listen()
    try:
        off = run(launcher, "--plain", "--ro", "/", "--no-network", "--", "bash", "-c",
                  f"echo > /dev/tcp/127.0.0.1/{port}")  # fmt: skip
        assert off.returncode != 0 and "not supported" in off.stderr, off
        script = (
            'echo "$HTTP_PROXY $ALL_PROXY"; '
            "p=${HTTP_PROXY##*:}; (echo hi > /dev/tcp/127.0.0.1/$p) && echo bridge-ok; "
            f"(echo x > /dev/tcp/127.0.0.1/{port}) 2>/dev/null || echo other-refused; "
            "(echo x > /dev/udp/127.0.0.1/53) 2>/dev/null || echo udp-refused"
        )
        done = run(launcher, "--plain", "--ro", "/", "--proxy-bridge", f"0:{proxy}", "--",
                   "bash", "-c", script)  # fmt: skip
        first, *rest = done.stdout.splitlines()
        http, socks = first.split()
        assert http.startswith("http://127.0.0.1:") and socks.startswith("socks5h://127.0.0.1:")
        assert rest == ["bridge-ok", "other-refused", "udp-refused"], done
    finally:
        server.close()
        unix.close()


def test_the_plain_tier_takes_no_namespace_option(launcher, tmp_path):  # noqa: F811
    for option in (["--private-ipc"], ["--private-network"], ["--deny-read", "/etc"],
                   ["--read-only-host"], ["--bind-ro", str(tmp_path)]):  # fmt: skip
        assert_launcher_failure(
            run(launcher, "--plain", "--ro", "/", *option, "--", "true"), "--plain"
        )


def test_ro_try_skips_what_the_caller_cannot_reach(launcher, tmp_path):  # noqa: F811
    gone = tmp_path / "gone"
    done = run(launcher, "--plain", "--ro-try", gone, "--ro-try", "/usr", "--ro-try", "/bin",
               "--ro-try", "/lib", "--ro-try", "/lib64", "--", "/bin/true")  # fmt: skip
    assert done.returncode == 0, done
    assert_launcher_failure(run(launcher, "--plain", "--ro", gone, "--", "true"), "gone")


def test_the_namespaced_tier_makes_the_host_read_only_but_the_grants(launcher, tmp_path):  # noqa: F811
    inside, outside = tmp_path / "in", tmp_path / "out"
    inside.mkdir()
    outside.mkdir()
    victim = outside / "v"
    victim.write_text("v")
    before = os.stat(victim)
    done = run(launcher, "--ro", "/", "--rw", inside, "--rw", "/dev/null", "--read-only-host",
               "--", "sh", "-c",
               f"chmod 600 {victim}; touch -d 2001-01-01 {victim}; echo ok > {inside}/f; "
               "echo > /dev/null && echo devnull")  # fmt: skip
    after = os.stat(victim)
    assert (after.st_mode, after.st_mtime_ns) == (before.st_mode, before.st_mtime_ns)
    assert done.stderr.count("Read-only file system") == 2, done.stderr
    assert (inside / "f").read_text() == "ok\n" and "devnull" in done.stdout


def test_the_namespaced_tier_binds_protected_paths_and_makes_missing_ones(launcher, tmp_path):  # noqa: F811
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    empty = tmp_path / "empty"
    empty.write_text("")
    done = run(launcher, "--ro", "/", "--rw", root, "--bind-ro", root / ".git" / "config",
               "--empty-dir", root / ".git" / "hooks", "--bind-file", empty, root / "stockade.yml",
               "--", "sh", "-c",
               "echo evil >> .git/config; echo x > .git/hooks/pre-commit; echo x > stockade.yml",
               cwd=root)  # fmt: skip
    assert done.stderr.count("Read-only file system") == 3, done.stderr
    assert (root / ".git" / "config").read_text() == "[core]\n"
    assert (root / ".git" / "hooks").is_dir() and not any((root / ".git" / "hooks").iterdir())
    assert (root / "stockade.yml").read_text() == ""
