"""Finding the host's named Unix sockets (sandbox/_sockets.py): the listings' formats,
and what a scan keeps, on this machine's real /proc."""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from stockade.sandbox import _sockets as s

LISTING = (
    b"Num       RefCount Protocol Flags    Type St Inode Path\n"
    b"0000000000000000: 00000002 00000000 00010000 0001 01 21 /run/docker.sock\n"
    b"0000000000000000: 00000002 00000000 00000000 0002 01 22 @/tmp/.X11-unix/X0\n"
    b"0000000000000000: 00000003 00000000 00000000 0001 03 23\n"
    b"0000000000000000: 00000003 00000000 00000000 0001 03 24 /run/docker.sock\n"
    b"0000000000000000: 00000002 00000000 00010000 0001 01 25 /var/tmp/a dir/s.sock\n"
    b"0000000000000000: 00000002 00000000 00010000 0001 01 26 relative.sock\n"
)


def test_the_listing_gives_absolute_paths_only():
    # Abstract (@), unnamed and relative sockets are not paths to cover; a path with
    # a space survives; an accepted connection repeats its listener's path (kept once).
    assert s.listed_paths(LISTING) == ["/run/docker.sock", "/var/tmp/a dir/s.sock"]
    assert s.listed_paths(b"") == []


def test_mount_points_are_unescaped():
    text = (
        b"22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
        b"40 22 254:0 /run/docker.sock /var/run/docker.sock rw - ext4 /dev/vda rw\n"
        b"41 22 254:0 / /mnt/a\\040b\\134c rw - ext4 /dev/vda rw\n"
    )
    assert s.mount_points(text) == ["/proc", "/var/run/docker.sock", "/mnt/a b\\c"]


@pytest.fixture
def place() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="stockade-sockets-", dir="/var/tmp"))
    yield path
    subprocess.run(["rm", "-rf", str(path)], check=False)


def bound(path: Path) -> socket.socket:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(1)
    return server


def test_a_bound_socket_is_found_at_its_real_path(place):
    real = place / "real"
    real.mkdir()
    (place / "alias").symlink_to(real)
    with bound(place / "alias" / "s.sock"):
        found = s.host_unix_sockets()
    # Listed as .../alias/s.sock, found where it is.
    assert str(real / "s.sock") in found
    assert str(place / "alias" / "s.sock") not in found


def test_a_socket_that_is_gone_or_was_replaced_is_not_kept(place):
    server = bound(place / "s.sock")
    try:
        os.unlink(place / "s.sock")
        (place / "s.sock").write_text("now a file\n")
        assert str(place / "s.sock") not in s.host_unix_sockets()
    finally:
        server.close()


def test_paths_under_proc_and_sys_are_skipped_but_not_dev():
    """/dev is scanned: the Landlock launcher shows a command the host's, where
    /dev/shm takes anyone's socket (bwrap's argv leaves them out: its /dev is its own)."""
    assert s._skipped("/proc/x") and s._skipped("/sys")
    assert not s._skipped("/dev/log") and not s._skipped("/dev/shm/x.sock")
    assert not s._skipped("/devices/x") and not s._skipped("/run/x")


def test_a_socket_in_dev_shm_is_found():
    path = f"/dev/shm/stockade-test-{os.getpid()}.sock"
    scan = s.SocketScan()
    try:
        with bound(Path(path)):
            assert path in s.host_unix_sockets()
            assert path in scan.sockets()
    finally:
        scan.close()
        os.unlink(path)


def test_a_scan_resolves_again_only_when_the_listing_changes(place, monkeypatch):
    scan = s.SocketScan()
    try:
        with bound(place / "first.sock"):
            assert str(place / "first.sock") in scan.sockets()
            calls = []
            real_resolve = s._resolve
            monkeypatch.setattr(
                s, "_resolve", lambda paths: calls.append(paths) or real_resolve(paths)
            )
            scan.sockets()
            assert calls == [s.WELL_KNOWN]  # the listed paths were kept
            with bound(place / "second.sock"):
                found = scan.sockets()
            assert str(place / "second.sock") in found and str(place / "first.sock") in found
    finally:
        scan.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount")
def test_a_socket_mounted_onto_a_file_is_found_after_the_mount(place):
    """Mounted onto a file (docker.sock into a container), a socket bound in another
    network namespace is found among the mount points, and the watch sees the mount."""
    target = place / "mounted.sock"
    target.write_text("")
    watch = s.MountWatch()
    try:
        assert str(target) not in watch.sockets()
        server = bound(place / "origin.sock")
        subprocess.run(["mount", "--bind", str(place / "origin.sock"), str(target)], check=True)
        try:
            assert str(target) in watch.sockets()
            assert str(target) in s.mounted_sockets()
        finally:
            subprocess.run(["umount", str(target)], check=True)
            server.close()
        assert str(target) not in watch.sockets()
    finally:
        watch.close()
