"""`stockade exec` when it holds placeholders (bwrap, workspace-write): it runs bwrap as
a child and waits, so it must still behave as the exec it replaces: the command's
exit status, a signal sent to it reaching the sandbox, the runner's death by a signal
becoming its own, and the default SIGPIPE a shell gives a command."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..support import pids_named, require_backend
from ..trust._support import STOCKADE


@pytest.fixture
def root() -> Iterator[Path]:
    require_backend("bwrap")
    path = Path(tempfile.mkdtemp(prefix="stockade-exec-wait-", dir="/var/tmp"))
    yield path
    path.rmdir()  # empty: exec removes the placeholders it made when bwrap is done


def exec_argv(root: Path, *command: str) -> list[str]:
    return [
        *STOCKADE, "exec", "--backend", "bwrap", "--mode", "workspace-write",
        "--root", str(root), "--", *command,
    ]  # fmt: skip


def wait_for(predicate, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def test_the_commands_status_is_execs(root: Path):
    # The placeholder it held (and made) stands while the command runs, then goes.
    script = f"[ \"$(stat -c %Y {root}/.vscode)\" != '' ] || exit 9; exit 7"
    done = subprocess.run(exec_argv(root, "bash", "-c", script), capture_output=True, text=True)
    assert done.returncode == 7, done.stderr
    assert sorted(os.listdir(root)) == []


def test_sigterm_to_exec_reaches_the_sandbox(root: Path):
    marker = f"stockade-exec-term-{os.getpid()}"
    process = subprocess.Popen(
        exec_argv(root, "bash", "-c", f"exec -a {marker} sleep 1000"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: pids_named(marker))
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=20)
    finally:
        process.kill()
    assert process.returncode in (-signal.SIGTERM, 128 + signal.SIGTERM), err
    assert "Traceback" not in err, err
    wait_for(lambda: not pids_named(marker), 10)


def test_the_runner_killed_by_sigkill_kills_exec_the_same_way(root: Path):
    marker = f"stockade-exec-kill-{os.getpid()}"
    process = subprocess.Popen(
        exec_argv(root, "bash", "-c", f"exec -a {marker} sleep 1000"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: pids_named(marker))
        # Its children: bwrap, and the watcher of its private temp directory (a shell).
        (runner,) = [
            pid
            for pid in children_of(process.pid)
            if Path(f"/proc/{pid}/comm").read_text().strip() == "bwrap"
        ]
        os.kill(runner, signal.SIGKILL)
        _, err = process.communicate(timeout=20)
    finally:
        process.kill()
    assert process.returncode == -signal.SIGKILL, err
    assert "Traceback" not in err, err


def test_a_command_gets_the_default_sigpipe(root: Path):
    """`yes | head -1`: yes dies of SIGPIPE quietly, as under a shell (Python itself
    ignores SIGPIPE; the runner must not inherit that)."""
    done = subprocess.run(
        exec_argv(root, "bash", "-c", "yes | head -1"), capture_output=True, text=True
    )
    assert (done.returncode, done.stdout) == (0, "y\n"), done.stderr
    assert "Broken pipe" not in done.stderr, done.stderr


# run_holding on a host without pidfds (os.pidfd_open: ENOSYS before Linux 5.3).
NO_PIDFDS = """
import errno, os, sys
from stockade.cli import _exec_wait

def no_pidfds(pid, flags=0):
    raise OSError(errno.ENOSYS, os.strerror(errno.ENOSYS))

_exec_wait.os.pidfd_open = no_pidfds
done = lambda: print("done after the runner:", os.path.exists("ran"), flush=True)
_exec_wait.run_holding(["sh", "-c", "sleep 0.3; touch ran; exit 3"], [], done=done)
"""


def test_exec_waits_for_its_runner_without_pidfds(tmp_path):
    """The runner is started before its pidfd is asked for: with none to be had, it is
    waited for all the same, and cleaned up after, rather than left running while exec
    says it could not start."""
    done = subprocess.run(
        [sys.executable, "-c", NO_PIDFDS], capture_output=True, text=True, cwd=tmp_path
    )
    assert (done.returncode, done.stdout) == (3, "done after the runner: True\n"), done.stderr


# run_holding whose clean-up after the command fails (a sweep, a removal, a note on a
# stderr whose reader is gone).
CLEANUP_FAILS = """
import errno, os
from stockade.cli import _exec_wait

def done():
    raise OSError(errno.EIO, os.strerror(errno.EIO))

_exec_wait.run_holding(["sh", "-c", "touch ran; exit 3"], [], done=done)
"""


def test_a_failed_clean_up_after_the_command_keeps_its_status(tmp_path):
    """The command ran: a clean-up that fails after it is said on stderr, and exec ends
    with the command's status, not as a runner that could not start (127)."""
    done = subprocess.run(
        [sys.executable, "-c", CLEANUP_FAILS], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 3, done.stderr
    assert (tmp_path / "ran").exists()
    assert done.stderr == (
        "stockade: cleaning up after the command failed: [Errno 5] Input/output error\n"
    )
