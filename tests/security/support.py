"""Helpers for the escape battery (the conftest holds only fixtures and hooks).

The battery's targets live in a scratch tree under /var/tmp, outside every writable
root (/tmp is a temp root that workspace-write may write). A `Terrain` is that
tree; its `state()` is what the assertions compare: every entry's type, mode,
owner, link count, size, mtime, ctime, content, xattrs and inode flags, so a
refused attack leaves `state()` exactly equal, whatever the command printed.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from stockade.sandbox._select import host_paths
from stockade.vocab import Enforcement, Network, SandboxMode

RO = SandboxMode.READ_ONLY
WW = SandboxMode.WORKSPACE_WRITE
DFA = SandboxMode.DANGER_FULL_ACCESS
MODES = (RO, WW)

REPO = Path(__file__).resolve().parents[2]
# The venv's interpreter, never `python3` from PATH (a pyenv shim that runs BASH_ENV).
VENV_PYTHON = str(REPO / ".venv" / "bin" / "python")
PYTHON = VENV_PYTHON if os.path.exists(VENV_PYTHON) else sys.executable
ATTACKS = str(Path(__file__).with_name("attacks.py"))
# What runs attacks.py as uid 65534: the venv's interpreter may lie out of its reach.
SYSTEM_PYTHON = "/usr/bin/python3"
# `{ATTACK} action args -- action args` in a command runs attacks.py inside the sandbox.
ATTACK = f"{PYTHON} -I -S {ATTACKS}"

NOBODY = 65534
IS_ROOT = os.geteuid() == 0
TAG_PREFIX = "stockade-sec-"
VICTIM_TEXT = "original\n"
OLD_TIME_NS = 1_577_836_800 * 10**9  # 2020-01-01, so a `touch` shows in mtime
KEEP_XATTR = "user.stockade-keep"
FS_IOC_GETFLAGS = 0x80086601


def expected_enforcement(
    backend: str,
    mode: SandboxMode,
    network: Network = Network.OFF,
    *,
    host_temp: tuple[str, ...] = (),
    tier: str = "namespaced",
) -> Enforcement:
    """The FILE claim each result must carry (docs/security.md, "Enforcement"): bwrap
    and the Landlock launcher's namespaced tier hold every file effect they govern
    (`full`; a repository made during a call is a standing limit said by `probe`, not
    by each call); the host's shared temp roots granted (`host_temp`) are named; the
    plain tier leaves the host's IPC objects, and in workspace-write metadata outside
    the roots and the protected paths, open (`partial`). What network off leaves open
    is the network claim's, apart."""
    if host_temp and mode is WW:
        return Enforcement.PARTIAL
    if backend == "landlock" and tier == "plain":
        return Enforcement.PARTIAL
    return Enforcement.FULL


def known_escape(request: pytest.FixtureRequest, when: bool, reason: str) -> None:
    """Mark a test whose attack SUCCEEDS on a backend: strict xfail, reported, never relaxed.

    When the backend is fixed the test XPASSes, strict turns that into a failure,
    and the mark comes off.
    """
    if when:
        request.applymarker(pytest.mark.xfail(strict=True, reason=f"ESCAPE: {reason}"))


# --- the scratch tree ---------------------------------------------------------------


def _inode_flags(path: str) -> int | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        buffer = fcntl.ioctl(fd, FS_IOC_GETFLAGS, b"\0" * 8)
        return struct.unpack("l", buffer)[0]
    except OSError:
        return None
    finally:
        os.close(fd)


def _xattrs(path: str) -> tuple[tuple[str, bytes], ...]:
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:
        return ()
    values = []
    for name in sorted(names):
        try:
            values.append((name, os.getxattr(path, name, follow_symlinks=False)))
        except OSError:
            values.append((name, b"?"))
    return tuple(values)


def entry_state(path: str) -> tuple[object, ...]:
    """Everything a file effect could change about one entry (atime aside: reads are allowed)."""
    st = os.lstat(path)
    kind = stat.S_IFMT(st.st_mode)
    if stat.S_ISREG(st.st_mode):
        with open(path, "rb") as handle:
            content: object = hashlib.sha256(handle.read()).hexdigest()
    elif stat.S_ISLNK(st.st_mode):
        content = os.readlink(path)
    else:
        content = None
    flags = _inode_flags(path) if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode) else None
    return (
        kind,
        stat.S_IMODE(st.st_mode),
        st.st_uid,
        st.st_gid,
        st.st_ino,
        st.st_nlink,
        st.st_size,
        st.st_mtime_ns,
        st.st_ctime_ns,
        content,
        _xattrs(path),
        flags,
    )


def tree_state(top: Path) -> dict[str, tuple[object, ...]]:
    """entry_state of `top` and everything beneath it, symlinks not followed."""
    state: dict[str, tuple[object, ...]] = {}
    pending = [str(top)]
    while pending:
        current = pending.pop()
        try:
            state[os.path.relpath(current, top)] = entry_state(current)
        except FileNotFoundError:
            continue
        if os.path.isdir(current) and not os.path.islink(current):
            pending.extend(os.path.join(current, name) for name in os.listdir(current))
    return state


def describe_change(before: dict, after: dict) -> str:
    lines = []
    for key in sorted(set(before) | set(after)):
        if before.get(key) != after.get(key):
            lines.append(f"  {key}: {before.get(key)} -> {after.get(key)}")
    return "\n".join(lines)


@dataclass
class Terrain:
    """/var/tmp/stockade-sec-XXXX/{ws (the root), outside, tools}, plus named host residue.

    outside/
      victim.txt      "original\\n", 0644, old mtime, a user xattr when the fs has them
      sub/keep.txt    a file in a subdirectory
      empty/          an empty directory
      public/         0777 (for the unprivileged caller): shared.txt 0666, nobody.txt owned by nobody
    ws/
      inside.txt, insidedir/f          legitimately writable under workspace-write
      file-link -> outside/victim.txt  (absolute), rel-link -> ../outside/victim.txt
      dir-link -> outside              (absolute)
    """

    base: Path
    tag: str
    root: Path = field(init=False)
    outside: Path = field(init=False)
    tools: Path = field(init=False)
    xattrs: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        self.root = self.base / "ws"
        self.outside = self.base / "outside"
        self.tools = self.base / "tools"

    @property
    def victim(self) -> Path:
        return self.outside / "victim.txt"

    @property
    def public(self) -> Path:
        return self.outside / "public"

    def host_name(self, suffix: str) -> str:
        """A unique name for residue outside the tree (/tmp, /dev/shm, /dev): removed at the end."""
        return f"{TAG_PREFIX}{self.tag}-{suffix}"

    def build(self) -> Terrain:
        os.chmod(self.base, 0o755)  # the unprivileged caller must traverse it
        for directory in (self.root, self.outside, self.tools):
            directory.mkdir()
        self.victim.write_text(VICTIM_TEXT)
        self.victim.chmod(0o644)
        try:
            os.setxattr(self.victim, KEEP_XATTR, b"keep")
            self.xattrs = True
        except OSError:
            self.xattrs = False
        (self.outside / "sub").mkdir()
        (self.outside / "sub" / "keep.txt").write_text("keep\n")
        (self.outside / "empty").mkdir()
        (self.outside / "proj").mkdir()
        (self.outside / "proj" / "victim.txt").write_text(VICTIM_TEXT)
        self.public.mkdir()
        self.public.chmod(0o777)
        shared = self.public / "shared.txt"
        shared.write_text(VICTIM_TEXT)
        shared.chmod(0o666)
        owned = self.public / "nobody.txt"
        owned.write_text(VICTIM_TEXT)
        owned.chmod(0o644)
        if IS_ROOT:
            os.chown(owned, NOBODY, NOBODY)
        (self.root / "inside.txt").write_text("inside\n")
        (self.root / "insidedir").mkdir()
        (self.root / "insidedir" / "f").write_text("f\n")
        (self.root / "file-link").symlink_to(self.victim)
        (self.root / "rel-link").symlink_to("../outside/victim.txt")
        (self.root / "dir-link").symlink_to(self.outside)
        for path in self.outside.rglob("*"):
            os.utime(path, ns=(OLD_TIME_NS, OLD_TIME_NS), follow_symlinks=False)
        os.utime(self.outside, ns=(OLD_TIME_NS, OLD_TIME_NS))
        return self

    def state(self, *, with_root: bool = False) -> dict[str, tuple[object, ...]]:
        """The outside tree, the base directory itself, and the root's identity.

        `with_root` adds the root's whole content (read-only promises nothing changes there).
        """
        state = {f"outside/{key}": value for key, value in tree_state(self.outside).items()}
        base = os.lstat(self.base)
        state["<base>"] = (sorted(os.listdir(self.base)), base.st_mtime_ns, base.st_ctime_ns)
        root = os.lstat(self.root) if os.path.lexists(self.root) else None
        state["<root>"] = (root.st_ino, stat.S_IFMT(root.st_mode)) if root else None
        if with_root:
            state.update({f"ws/{key}": value for key, value in tree_state(self.root).items()})
        return state

    def residue(self) -> list[str]:
        """Host paths carrying this terrain's tag (in /tmp, /var/tmp, /dev/shm, /dev)."""
        found = []
        for directory in ("/tmp", "/var/tmp", "/dev/shm", "/dev"):
            with contextlib.suppress(OSError):
                found += [
                    os.path.join(directory, name)
                    for name in os.listdir(directory)
                    if name.startswith(f"{TAG_PREFIX}{self.tag}-")
                ]
        return found

    def remove(self) -> None:
        for path in self.residue():
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(path)
        # Undo inode flags an escaped chattr could have left (rmtree cannot remove an
        # append-only or immutable file).
        with contextlib.suppress(OSError):
            subprocess.run(
                ["chattr", "-R", "-ia", str(self.base)], capture_output=True, check=False
            )
        shutil.rmtree(self.base, ignore_errors=True)


def new_terrain() -> Terrain:
    base = Path(tempfile.mkdtemp(prefix=TAG_PREFIX, dir="/var/tmp"))
    for temp_root in host_paths().temp_roots:
        if os.path.realpath(base).startswith(temp_root.rstrip("/") + "/"):
            shutil.rmtree(base)
            pytest.fail(f"{base} lies under the temp root {temp_root}; unset TMPDIR=/var/tmp")
    return Terrain(base=base, tag=uuid.uuid4().hex[:10]).build()


# --- host facts ---------------------------------------------------------------------


def proc_status(text: str) -> dict[str, str]:
    return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)


def live_processes_with(marker: str) -> list[int]:
    """Host pids (not zombies) whose command line carries `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z" and marker.encode() in cmdline:
            found.append(int(entry.name))
    return found


def host_openable(path: str, flags: int) -> bool:
    try:
        os.close(os.open(path, flags | os.O_NOCTTY | os.O_NONBLOCK))
    except OSError:
        return False
    return True


def writable_devices() -> list[str]:
    """Device nodes on the host /dev that this (unconfined) caller can open for writing.

    Only opened, never written: the kernel log, consoles, loop and disk devices.
    """
    candidates = ["/dev/kmsg", "/dev/console", "/dev/tty1", "/dev/loop0"]
    root_dev = os.stat("/").st_dev
    with contextlib.suppress(OSError):
        for name in sorted(os.listdir("/dev")):
            with contextlib.suppress(OSError):
                st = os.lstat(f"/dev/{name}")
                if stat.S_ISBLK(st.st_mode) and st.st_rdev == root_dev:
                    candidates.append(f"/dev/{name}")
    return [
        path for path in candidates if os.path.exists(path) and host_openable(path, os.O_WRONLY)
    ]


def block_devices() -> list[str]:
    """Block device nodes on the host /dev this caller can open read-only."""
    found = []
    with contextlib.suppress(OSError):
        for name in sorted(os.listdir("/dev")):
            path = f"/dev/{name}"
            with contextlib.suppress(OSError):
                if stat.S_ISBLK(os.lstat(path).st_mode) and host_openable(path, os.O_RDONLY):
                    found.append(path)
    return found[:2]


def cgroup_dirs() -> list[str]:
    """Mount points of cgroup (v1) and cgroup2 hierarchies on the host."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        if right.split()[0] in ("cgroup", "cgroup2"):
            found.append(left.split()[4])
    return found


@contextlib.contextmanager
def restoring(path: str) -> Iterator[str]:
    """Yield `path`'s content; put it back if an attempt changed it (host sysctl/sysfs)."""
    before = Path(path).read_text()
    try:
        yield before
    finally:
        with contextlib.suppress(OSError):
            if Path(path).read_text() != before:
                Path(path).write_text(before)


@contextlib.contextmanager
def restoring_hostname() -> Iterator[str]:
    before = socket.gethostname()
    try:
        yield before
    finally:
        if socket.gethostname() != before:
            Path("/proc/sys/kernel/hostname").write_text(before)


def unconfined_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv),
        capture_output=True,
        text=True,
        timeout=10,
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        cwd="/",
    )
