"""`stockade exec`'s processes end with it (issue 21, door 8), on both backends, both
ways exec starts its runner (execing bwrap or the launcher; bwrap as a child while it
holds placeholders): what the command left running in the background, after
`setsid`, through a double fork or ignoring SIGHUP and SIGTERM is gone when exec
returns, and when exec alone is killed.

Judged from the host: no live process carries the test's marker (a zombie counts as
gone: this machine's pid 1 may never reap). The control is
tests/launcher/test_launcher_pidns.py::test_control_without_the_launcher_processes_escape.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..launcher.test_launcher_pidns import escaping, kill_all, marked
from ..support import REAL_BACKENDS, require_backend
from ..trust._support import STOCKADE

pytestmark = pytest.mark.kernel
# read-only: exec execs its runner; workspace-write under bwrap: it holds placeholders
# and waits for bwrap as a child (src/stockade/_exec_wait.py).
MODES = ("read-only", "workspace-write")


@pytest.fixture(params=REAL_BACKENDS)
def backend(request) -> str:
    require_backend(request.param)
    return request.param


@pytest.fixture
def root() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="stockade-exec-procs-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path)


@pytest.fixture
def marker(request) -> Iterator[str]:
    name = f"stockade-exec-procs-{os.getpid()}-{len(request.node.name)}-{request.node.name[-12:]}"
    name = "".join(c if c.isalnum() or c == "-" else "-" for c in name)
    yield name
    kill_all(marked(name))


def exec_argv(backend: str, mode: str, root: Path, script: str) -> list[str]:
    return [
        *STOCKADE, "exec", "--backend", backend, "--mode", mode, "--root", str(root),
        "--", "bash", "-c", script,
    ]  # fmt: skip


def wait_for(predicate, seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.mark.parametrize("mode", MODES)
def test_nothing_the_command_started_outlives_exec(backend, mode, root, marker):
    done = subprocess.run(
        exec_argv(backend, mode, root, escaping(marker)),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert (done.returncode, done.stdout) == (0, "started 4\n"), done.stderr
    assert marked(marker) == []


@pytest.mark.parametrize("mode", MODES)
def test_nothing_outlives_exec_killed_alone(backend, mode, root, marker, tmp_path):
    """SIGKILL to the exec process only (not its group): bwrap's --die-with-parent, the
    launcher's init tied to it, and the kernel ends the namespace. (An exec killed so
    cannot sweep the placeholders it held, which the next exec there does: made under
    this test's own TMPDIR and cache, not in the host's /tmp and the tool cache every
    other test's calls share. Its private temp directory: the test below.)"""
    script = escaping(marker) + f"; exec -a {marker}-main sleep 300"
    cache = tmp_path / "cache"
    cache.mkdir()
    process = subprocess.Popen(
        exec_argv(backend, mode, root, script),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        env={**os.environ, "TMPDIR": str(tmp_path), "XDG_CACHE_HOME": str(cache)},
    )
    try:
        wait_for(lambda: len(marked(marker)) == 5)
        process.kill()
        process.wait(10)
        wait_for(lambda: marked(marker) == [], 10)
    finally:
        process.kill()
        process.wait()


def test_sigterm_to_exec_ends_the_command_and_the_rest(backend, root, marker):
    """SIGTERM to exec alone reaches the command (passed down, not lost), and what it
    started ends with it."""
    script = escaping(marker) + f"; exec -a {marker}-main sleep 300"
    process = subprocess.Popen(
        exec_argv(backend, "workspace-write", root, script),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for(lambda: len(marked(marker)) == 5)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=20)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == -signal.SIGTERM, err
    wait_for(lambda: marked(marker) == [], 10)


@pytest.mark.parametrize("verb", ["exec", "run"])
@pytest.mark.parametrize("kill", ["alone", "its group"])
def test_a_killed_exec_leaves_no_private_temp_directory(
    backend, root, marker, tmp_path, kill, verb
):
    """An agent's timeout kills exec, or run (SIGKILL, to it alone or to its process
    group) while its command runs: the command's private temp directory, and what it
    wrote there, are removed all the same (its watcher, cli/_tmp_watch.py). The
    control, the watcher killed too: tests/cli/test_tmp_watch.py."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    script = f'head -c 1000000 /dev/zero > "$TMPDIR/big" && exec -a {marker}-main sleep 300'
    argv = exec_argv(backend, "workspace-write", root, script)
    argv[argv.index("exec")] = verb
    process = subprocess.Popen(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        env={**os.environ, "TMPDIR": str(temp), "XDG_CACHE_HOME": str(tmp_path / "cache")},
    )
    try:
        wait_for(lambda: len(marked(marker)) == 1)
        (made,) = temp.iterdir()
        assert (made / "big").stat().st_size == 1_000_000
        if kill == "alone":
            process.kill()
        else:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)
        wait_for(lambda: list(temp.iterdir()) == [], 10)
        wait_for(lambda: marked(marker) == [], 10)
    finally:
        process.kill()
        process.wait()


def test_an_exec_that_ends_leaves_no_watcher(root, tmp_path):
    """The watcher of exec's private temp directory ends with exec, waited for: no
    process naming that directory outlives it, and the directory is gone when it
    returns."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    done = subprocess.run(
        [*STOCKADE, "exec", "--mode", "workspace-write", "--root", str(root), "--",
         "sh", "-c", 'echo x > "$TMPDIR/x"'],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "TMPDIR": str(temp), "XDG_CACHE_HOME": str(tmp_path / "cache")},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert list(temp.iterdir()) == []
    # The watcher's command line names the directory (its argument).
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                assert str(temp).encode() not in (entry / "cmdline").read_bytes(), entry.name
            except OSError:
                continue
