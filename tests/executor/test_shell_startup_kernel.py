"""A confined `bash -c` reads no startup file, at any shell level, on each backend and
tier: the sandbox's filters refuse making a socket, never asking of one.

bash, not interactive, reads ~/.bashrc when it takes its standard input for a network
connection (`getpeername` on it fails otherwise than "not a socket") and its shell
level is below 2. A filter that refused `getpeername` with EPERM (Codex's does) makes
every confined `bash -c` run from a caller whose SHLVL is 0 run the person's ~/.bashrc
first: slower by whatever it does, and doing it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from stockade.vocab import ExecutionPolicy, SandboxMode

from ..support import BACKEND_VARIANTS, executor_on, need

MARK = "BASHRC-RAN"


@pytest.fixture
def home_with_bashrc(monkeypatch) -> Iterator[Path]:
    # Not under /tmp: bwrap and the namespaced tier give a command a fresh /tmp, where
    # this ~/.bashrc would not be there to be read at all.
    home = Path(tempfile.mkdtemp(prefix="stockade-home-", dir="/var/tmp"))
    (home / ".bashrc").write_text(f"echo {MARK}\n")
    monkeypatch.setenv("HOME", str(home))
    # As a job started by a non-interactive shell's `&` can have it.
    monkeypatch.setenv("SHLVL", "0")
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_control_bash_reads_bashrc_when_stdin_seems_a_connection(home_with_bashrc):
    """The heuristic is real on this host's bash: standard input a connected socket."""
    need("bash")
    ours, theirs = socket.socketpair()
    with ours, theirs:
        done = subprocess.run(
            ["bash", "-c", "echo done"], stdin=theirs, capture_output=True, text=True, check=False
        )
    assert MARK in done.stdout, (done.stdout, done.stderr)
    # And not when it is not one.
    done = subprocess.run(
        ["bash", "-c", "echo done"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    assert MARK not in done.stdout


@pytest.mark.parametrize("variant", BACKEND_VARIANTS)
async def test_a_confined_bash_reads_no_startup_file(home_with_bashrc, scratch, variant):
    need("bash")
    assert os.environ["SHLVL"] == "0"
    async with executor_on(variant) as executor:
        for mode in (SandboxMode.READ_ONLY, SandboxMode.WORKSPACE_WRITE):
            result = await executor.run(
                executor.resolve(
                    # The file is there to be read: what bash did not read, it chose not to.
                    "cat ~/.bashrc && bash -c 'echo done'",
                    policy=ExecutionPolicy(mode=mode, workspace_root=scratch),
                )
            )
            assert result.exit_code == 0, result.stderr
            # The file once (cat), and no line of its own running.
            assert result.stdout.split() == ["echo", MARK, "done"], (mode, result.stdout)
