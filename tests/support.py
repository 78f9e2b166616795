"""Helpers the test modules import (conftest only holds fixtures)."""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import site
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from stockade.sandbox._select import select_backend
from stockade.sandbox.config import ProviderConfig

IN_CI = os.environ.get("CI") == "true"
REAL_BACKENDS = ("bwrap", "landlock")
# What the real-kernel suites judge: each backend, and the Landlock launcher's plain
# tier forced on this host (`landlock_tier: plain`), as a host with no namespaces has
# it (tests/security/test_plain_hosts.py simulates such hosts themselves).
PLAIN = "landlock-plain"
BACKEND_VARIANTS = (*REAL_BACKENDS, PLAIN)
NOBODY = 65534
IS_ROOT = os.geteuid() == 0
REPO = Path(__file__).resolve().parents[1]


def variant_backend(variant: str) -> str:
    """The backend a result names for `variant` ("landlock" for its plain tier)."""
    return "landlock" if variant == PLAIN else variant


def variant_tier(variant: str) -> str | None:
    """The Landlock launcher's tier `variant` runs in (None: another backend)."""
    if variant == PLAIN:
        return "plain"
    return "namespaced" if variant == "landlock" else None


@contextlib.contextmanager
def small_filesystem(path: Path, size: str) -> Iterator[Path]:
    """`path` (made here) as a tmpfs of `size` (`128m`) of its own, for a test of a
    full disk; skip locally, FAIL in CI, when not root (mounting needs it)."""
    if not IS_ROOT:
        message = "mounting a small filesystem needs root"
        if IN_CI:
            pytest.fail(f"CI=true and {message}")
        pytest.skip(message)
    path.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def need(*tools: str, path: str | None = None) -> None:
    """Each tool on `path` (default: the host's), or skip locally and FAIL in CI (.ci/run
    installs them)."""
    search = os.pathsep.join([path or os.environ.get("PATH", ""), "/usr/sbin"])
    missing = [tool for tool in tools if shutil.which(tool, path=search) is None]
    if missing:
        message = f"not installed: {', '.join(missing)}"
        if IN_CI:
            pytest.fail(f"CI=true and a tool is missing ({message}): .ci/run installs it")
        pytest.skip(message)


def require_backend(name: str) -> ProviderConfig:
    """A config forcing backend `name` (a BACKEND_VARIANTS name); skip locally, FAIL in
    CI, when it is unusable."""
    config = ProviderConfig(
        backend=variant_backend(name), landlock_tier="plain" if name == PLAIN else "auto"
    )
    selection = select_backend(config)
    if selection.backend is None:
        message = f"backend {name} unusable here: {selection.detail}"
        if IN_CI:
            pytest.fail(f"CI=true and a real backend is missing: {message}")
        pytest.skip(message)
    return config


@contextlib.asynccontextmanager
async def executor_on(backend: str | None, config=None):
    """An executor confining with `backend` (as `require_backend` does), or with none
    (None: the local executor, every command unconfined)."""
    from stockade.executor.actor import open_executor
    from stockade.sandbox.actor import open_provider

    if backend is None:
        async with open_executor(config) as executor:
            yield executor
        return
    async with (
        open_provider(require_backend(backend)) as provider,
        open_executor(config, provider) as executor,
    ):
        yield executor


def stockade(*args: str, cwd=None, env=None):
    """Run the `stockade` command as a person would: a fresh process, no stdin."""
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "stockade", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        check=False,
        stdin=subprocess.DEVNULL,
        env=None if env is None else {**os.environ, **env},
    )


def pids_with_marker(name: str) -> list[int]:
    """Host pids (other than this one) whose command line carries `name`; visible
    across PID namespaces, so it finds what bwrap's sandboxes started too."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if name.encode() in cmdline:
            found.append(int(entry.name))
    return found


def describe_processes(pids: Sequence[int]) -> str:
    """What the kernel says of each of `pids`, one line each, for a test's failure
    message: a process that outlived its kill is a flake to explain, not to rerun
    (its state, parent, process group, session, namespaces' pids, cgroup, wait)."""
    lines = []
    for pid in pids:
        base = Path(f"/proc/{pid}")
        try:
            cmdline = (base / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            fields = (base / "stat").read_text().rsplit(")", 1)[1].split()
            status = dict(
                line.split(":\t", 1)
                for line in (base / "status").read_text().splitlines()
                if ":\t" in line
            )
            cgroup = (base / "cgroup").read_text().strip().replace("\n", "; ")
            wchan = (base / "wchan").read_text()
        except OSError as error:
            lines.append(f"{pid}: gone or unreadable ({error})")
            continue
        lines.append(
            f"{pid}: state {fields[0]}, ppid {fields[1]}, pgrp {fields[2]}, "
            f"session {fields[3]}, nspid {status.get('NSpid', '?').strip()}, "
            f"sigblk {status.get('SigBlk', '?')}, sigign {status.get('SigIgn', '?')}, "
            f"wchan {wchan}, cgroup {cgroup}, cmdline {cmdline!r}"
        )
    return f"(this process: pid {os.getpid()}, pgrp {os.getpgrp()}) " + " | ".join(lines)


def pids_named(name: str) -> list[int]:
    """Host pids whose argv[0] is `name` (`exec -a`): the command's own process, seen
    across pid namespaces (not the shell, runner or stockade process whose command
    line mentions it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv0 = (entry / "cmdline").read_bytes().split(b"\0")[0]
            except OSError:
                continue
            if argv0 == name.encode():
                found.append(int(entry.name))
    return found


def zombie_children() -> list[int]:
    me = os.getpid()
    zombies = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] == "Z" and int(fields[1]) == me:
            zombies.append(int(entry.name))
    return zombies


# --- what uid 65534 reads ----------------------------------------------------------------


def nobody_reads(paths: Sequence[str]) -> list[bool]:
    """Which of `paths` uid/gid 65534 (no groups) can read (a directory: list and
    enter), as the kernel answers a process running as nobody. Root only."""
    script = (
        'for p; do if [ -r "$p" ] && { [ ! -d "$p" ] || [ -x "$p" ]; }; '
        "then echo y; else echo n; fi; done"
    )
    done = subprocess.run(
        ["/bin/sh", "-c", script, "sh", *paths],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        cwd="/",
    )
    return [answer == "y" for answer in done.stdout.split()]


def _link_or_copy(source: str, target: str) -> str:
    """A hard link when others may already read (and run) the file; else a copy they may."""
    mode = stat.S_IMODE(os.stat(source).st_mode)
    if mode & stat.S_IROTH and (mode & stat.S_IXOTH or not mode & stat.S_IXUSR):
        with contextlib.suppress(OSError):  # another filesystem: copy
            os.link(source, target)
            return target
    shutil.copy2(source, target)
    os.chmod(target, mode | 0o444 | (0o111 if mode & stat.S_IXUSR else 0))
    return target


def _mirror_tree(source: str, base: Path) -> None:
    """`source` at `base` + its absolute path, every directory on the way mode 755."""
    target = base / source.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(source, target, symlinks=True, copy_function=_link_or_copy)
    for directory, _, _ in os.walk(target):
        os.chmod(directory, 0o755)
    for parent in target.parents:
        if parent == base:
            break
        os.chmod(parent, 0o755)


@dataclass(frozen=True)
class NobodyView:
    """What uid 65534 reads in place of this checkout and its venv.

    `base` is None when nobody reaches the originals (CI's checkout under /opt); else
    a session-wide mirror whose tree repeats the originals' absolute paths (a clone
    in a mode-700 home: /root, or ~/src on a normal account).
    """

    base: Path | None

    def path(self, original: str | os.PathLike[str]) -> str:
        """`original`, or its copy in the mirror when the mirror has one."""
        if self.base is None:
            return str(original)
        copy = self.base / os.path.realpath(original).lstrip("/")
        return str(copy) if os.path.lexists(copy) else str(original)

    @property
    def pythonpath(self) -> str:
        """PYTHONPATH for an interpreter run as nobody: this checkout, then the venv's."""
        return os.pathsep.join(self.path(p) for p in [REPO / "src", *site.getsitepackages()])

    @functools.cached_property
    def python(self) -> str:
        """An interpreter nobody can run that imports this checkout (with `pythonpath`):
        the venv's, else the system's of the same version (a venv under a private home,
        or a pyenv build there, is out of reach). Skips (fails in CI) when none."""
        major, minor = sys.version_info[:2]
        version = f"{major}.{minor}"
        check = (
            "import sys, stockade.executor.actor, trio; "
            f"assert sys.version_info[:2] == ({major}, {minor}), sys.version"
        )
        tried = []
        candidates = (
            sys.executable,
            os.path.realpath(sys.executable),
            f"/usr/bin/python{version}",
            f"/usr/local/bin/python{version}",
        )
        for candidate in dict.fromkeys(candidates):
            try:
                done = subprocess.run(
                    [candidate, "-c", check],
                    capture_output=True,
                    text=True,
                    timeout=60,
                    user=NOBODY,
                    group=NOBODY,
                    extra_groups=[],
                    cwd="/",
                    env={**os.environ, "HOME": "/", "PYTHONPATH": self.pythonpath},
                )
            except OSError as error:
                tried.append(f"{candidate}: {error}")
                continue
            if done.returncode == 0:
                return candidate
            tried.append(f"{candidate}: {done.stderr.strip().splitlines()[-1:]}")
        pytest.skip(f"no interpreter uid {NOBODY} can run: " + "; ".join(tried))


@contextlib.contextmanager
def nobody_view() -> Iterator[NobodyView]:
    """The view for this session: a mirror only when root runs the tests and nobody
    cannot reach the checkout or the venv (not root: no test runs as nobody)."""
    trees = [REPO / "src", REPO / "tests", *map(Path, site.getsitepackages())]
    found = list(dict.fromkeys(str(tree.resolve()) for tree in trees if tree.is_dir()))
    hidden = (
        [tree for tree, ok in zip(found, nobody_reads(found), strict=True) if not ok]
        if IS_ROOT
        else []
    )
    if not hidden:
        yield NobodyView(None)
        return
    # Outside /tmp: a temp root is writable in workspace-write, and stockade refuses
    # an installation (this mirror, for the nobody runner) inside a writable root.
    base = Path(tempfile.mkdtemp(prefix="stockade-public-", dir="/var/tmp"))
    try:
        base.chmod(0o755)
        for tree in hidden:
            _mirror_tree(tree, base)
        yield NobodyView(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


# The two command rules every face's rule test mounts through its composition's bash
# entry (tests/approval/test_rule_prompt_pty.py, tests/mcp, tests/acp).
TOUCH_PROMPT = {
    "name": "ask-touch",
    "prefix": ["touch"],
    "decision": "prompt",
    "reason": "this project makes no empty files unasked",
    "match": ["touch x"],
}
RM_FORBIDDEN = {
    "name": "no-rm",
    "prefix": ["rm"],
    "decision": "forbid",
    "reason": "files here are removed by the person only",
    "match": ["rm x"],
}


# Where tests mount for themselves (a bind or a tmpfs in a directory of their own).
_TEMP_DIRS = ("/tmp/", "/var/tmp/")


def host_mount_table(*own: str | os.PathLike[str]) -> list[str]:
    """This (host) mount namespace's mounts, each as one line of what identifies it, sorted,
    leaving out those under a temporary directory other than the test's `own`: the
    suite runs in two xdist workers, and the other one's tests mount in their own
    directories meanwhile. What an attack could mount or remount (`/`, `/proc`, any
    mount outside the temporary directories, anything under the test's own) stays in.
    """
    mine = tuple(os.path.realpath(path) + "/" for path in own)
    table = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        point = fields[4].replace("\\040", " ") + "/"
        if point.startswith(_TEMP_DIRS) and not point.startswith(mine):
            continue
        # Its id, mount point and options, and the filesystem's (after " - "); not
        # the peer groups, which the kernel renumbers as others' mounts come and go.
        table.append(" ".join([*(fields[i] for i in (0, 4, 5)), line.partition(" - ")[2]]))
    return sorted(table)
