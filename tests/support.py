"""Helpers the test modules import (conftest only holds fixtures)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stockade.sandbox._select import select_backend
from stockade.sandbox.config import ProviderConfig

IN_CI = os.environ.get("CI") == "true"
REAL_BACKENDS = ("bwrap", "landlock")


def require_backend(name: str) -> ProviderConfig:
    """A config forcing backend `name`; skip locally, FAIL in CI, when it is unusable."""
    config = ProviderConfig(backend=name)
    selection = select_backend(config)
    if selection.backend is None:
        message = f"backend {name} unusable here: {selection.detail}"
        if IN_CI:
            pytest.fail(f"CI=true and a real backend is missing: {message}")
        pytest.skip(message)
    return config


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
    """Host pids whose command line carries `name` (visible across pid namespaces)."""
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
