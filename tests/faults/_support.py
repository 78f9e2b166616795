"""Helpers for the fault and hostile-input tests (no fixtures here; see conftest.py)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import stockade

from ..support import pids_with_marker as pids_with_marker
from ..support import zombie_children as zombie_children

IN_CI = os.environ.get("CI") == "true"
SRC = str(Path(stockade.__file__).resolve().parent.parent)
REPO = Path(__file__).resolve().parents[2]


def cannot_here(reason: str) -> None:
    """Something this machine cannot do: FAIL in CI (never skip silently), skip locally."""
    if IN_CI:
        pytest.fail(f"CI=true and this test cannot run: {reason}")
    pytest.skip(reason)


def marker() -> str:
    return f"stockade-fault-{uuid.uuid4().hex[:12]}"


def sleeper(name: str, seconds: int = 1000) -> str:
    """A process findable from the host by `name` (exec -a renames its argv[0])."""
    return f"(exec -a {name} sleep {seconds})"


def open_fds() -> dict[int, str]:
    """This process's descriptors and what each points at."""
    fds = {}
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            fds[int(name)] = os.readlink(f"/proc/self/fd/{name}")
    return fds


def kill_leftovers(pids: list[int]) -> None:
    """Clean up after a test that found leaked processes (ours, by pid)."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, 9)


def python_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([SRC, str(REPO)])
    return env


def run_python(script: str, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run `script` with this interpreter (never `python3` from PATH)."""
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=python_env(),
        check=False,
    )


@contextlib.contextmanager
def outside_temp_roots(prefix: str = "stockade-fault-") -> Iterator[Path]:
    """A scratch directory outside every host temp root (like tests/conftest `scratch`).

    State directories live here too: a session log under a writable root is something
    the harness may (rightly) refuse.
    """
    import shutil
    import tempfile

    from stockade.sandbox._select import host_paths

    base = tempfile.mkdtemp(prefix=prefix, dir="/var/tmp")
    for temp_root in host_paths().temp_roots:
        if os.path.realpath(base).startswith(temp_root.rstrip("/") + "/"):
            pytest.fail(f"{base} lies under the temp root {temp_root}; unset TMPDIR=/var/tmp")
    try:
        yield Path(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


@contextlib.contextmanager
def tiny_tmpfs(path: Path, size: str) -> Iterator[Path]:
    """A real, tiny filesystem at `path` that fills up (needs root; unmounted after)."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        cannot_here("mounting a tmpfs needs root")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        cannot_here(f"mount -t tmpfs failed: {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        done = subprocess.run(["umount", str(path)], capture_output=True, check=False)
        if done.returncode != 0:
            subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


def composition(
    state_dir: str | Path, *, sandbox: dict | None = None, fs: bool = False, **bash: object
) -> list:
    """The sandboxed product path (provider, confining bash, approval, log) as entries."""
    entries = [
        {"id": "sandbox", "name": "stockade.sandbox.local", "config": sandbox or {}},
        {"id": "bash", "name": "stockade.bash.sandbox", "config": dict(bash)},
        {"id": "approval", "name": "stockade.approval.user"},
        {"id": "log", "name": "stockade.session.log", "config": {"state_dir": str(state_dir)}},
    ]
    if fs:
        entries.append({"id": "fs", "name": "stockade.fs.sandbox"})
    return entries
