"""A call's processes end with the call (issue 21, door 8), under every verb and both
backends: `stockade run`, the library executor's foreground call and background job,
and a grant to a wider mode approved once through the bash tool. Whatever the command
left running (in the background, after `setsid`, through a double fork, ignoring
SIGHUP and SIGTERM) is gone when the call returns.

Judged from the host: no live process carries the test's marker (a zombie counts as
gone), and a writer the granted call started stops writing. The control (the same
script run bare, its processes outliving it) is
tests/launcher/test_launcher_pidns.py::test_control_without_the_launcher_processes_escape.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from stockade import open_harness
from stockade.approval.answerers import ScriptedAnswerer

from ..launcher.test_launcher_pidns import escaping, kill_all, marked
from ..support import REAL_BACKENDS, require_backend
from .test_executor_kernel import RO, WW, executor_for, spec

pytestmark = pytest.mark.kernel


@pytest.fixture(params=REAL_BACKENDS)
def backend(request) -> str:
    require_backend(request.param)
    return request.param


@pytest.fixture
def marker() -> Iterator[str]:
    name = f"stockade-call-procs-{uuid.uuid4().hex[:12]}"
    yield name
    kill_all(marked(name))


@pytest.fixture
def tree() -> Iterator[tuple[Path, Path]]:
    """(root, state dir): outside every host temp root."""
    base = Path(tempfile.mkdtemp(prefix="stockade-call-procs-", dir="/var/tmp"))
    (base / "root").mkdir()
    (base / "state").mkdir()
    yield base / "root", base / "state"
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("mode", ["read-only", "workspace-write"])
def test_stockade_run_leaves_nothing_running(backend, mode, tree, marker):
    root, _ = tree
    options = ["--backend", backend, "--mode", mode, "--root", str(root)]
    done = subprocess.run(
        [sys.executable, "-m", "stockade", "run", *options, escaping(marker)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=root,
        stdin=subprocess.DEVNULL,
    )
    assert (done.returncode, done.stdout) == (0, "started 4\n"), done.stderr
    assert marked(marker) == []


@pytest.mark.parametrize("mode", [RO, WW], ids=lambda mode: mode.value)
async def test_a_foreground_call_leaves_nothing_running(backend, mode, tree, marker):
    root, _ = tree
    async with executor_for(require_backend(backend)) as executor:
        result = await executor.run(spec(executor, escaping(marker), mode, root))
        assert (result.exit_code, result.stdout) == (0, "started 4\n"), result.stderr
        assert marked(marker) == []


@pytest.mark.parametrize("mode", [RO, WW], ids=lambda mode: mode.value)
async def test_a_background_job_leaves_nothing_running(backend, mode, tree, marker):
    root, _ = tree
    async with executor_for(require_backend(backend)) as executor:
        handle = await executor.start(spec(executor, escaping(marker), mode, root))
        report = await executor.wait(handle.id)
        assert report.stdout == "started 4\n", report
        assert marked(marker) == []


async def test_a_killed_background_job_leaves_nothing_running(backend, tree, marker):
    root, _ = tree
    script = escaping(marker) + f"; exec -a {marker}-main sleep 300"
    async with executor_for(require_backend(backend)) as executor:
        handle = await executor.start(spec(executor, script, WW, root))
        with trio.fail_after(20):
            while len(marked(marker)) < 5:
                await trio.sleep(0.05)
        await executor.kill(handle.id)
        assert marked(marker) == []


def composition(backend: str, state_dir: Path, bash: dict | None = None) -> list[dict]:
    return [
        {"id": "sandbox", "name": "stockade.sandbox.local", "config": {"backend": backend}},
        {"id": "bash", "name": "stockade.bash.sandbox", "config": bash or {}},
        {"id": "approval", "name": "stockade.approval.user"},
        {"id": "log", "name": "stockade.session.log", "config": {"state_dir": str(state_dir)}},
    ]


def background_writer(marker: str, grows: Path) -> str:
    """A writer that leaves the process group, started once it has written."""
    writer = f"while :; do echo x >> {grows}; sleep 0.02; done"
    return (
        f"setsid bash -c 'exec -a {marker}-writer bash -c \"{writer}\"' >/dev/null 2>&1 & "
        f"until [ -s {grows} ]; do sleep 0.02; done; echo started"
    )


# No limit held by a cgroup: the call has none, whose end would take the writer along.
NO_CGROUP = {"limits": {"processes": None, "memory": None}}


async def test_control_unconfined_the_writer_outlives_its_call(tree, marker):
    """The attack is real: danger-full-access runs the command with no namespace of its
    own, and (with no cgroup of its own either) the writer keeps writing after the call
    returned."""
    root, state_dir = tree
    grows = root / "grows.txt"
    async with open_harness(composition("auto", state_dir, NO_CGROUP)) as harness:
        session = await harness.open_session(cwd=root)
        await session.set_sandbox_mode("danger-full-access")
        result = await session.run_tool("bash", {"command": background_writer(marker, grows)})
        assert result.text.startswith("started"), result.text
        # The writer is alive (a copy of it forked for its `sleep`, not yet exec'd,
        # carries the marker too, for a moment: at least one, not exactly one).
        assert marked(marker) != []
        size = grows.stat().st_size
        with trio.fail_after(10):
            while grows.stat().st_size == size:
                await trio.sleep(0.05)


async def test_unconfined_with_limits_the_writer_ends_with_its_call(tree, marker):
    """With the default limits, a danger-full-access call has a cgroup of its own
    (issue 26): its end kills what is left in it, the writer that left its process
    group included. (A root command could still move itself out: the claim says
    partial.)"""
    root, state_dir = tree
    grows = root / "grows.txt"
    async with open_harness(composition("auto", state_dir)) as harness:
        session = await harness.open_session(cwd=root)
        await session.set_sandbox_mode("danger-full-access")
        result = await session.run_tool("bash", {"command": background_writer(marker, grows)})
        assert result.text.startswith("started"), result.text
        assert marked(marker) == []
        size = grows.stat().st_size
        await trio.sleep(0.3)
        assert grows.stat().st_size == size


async def test_a_grant_approved_once_ends_with_its_call(backend, tree, marker):
    """An escalation approved once (read-only -> workspace-write) starts a writer that
    leaves the call's process group: when the call returns, the writer is gone and the
    file it kept appending to stops growing (the grant did not outlive its call)."""
    root, state_dir = tree
    grows = root / "grows.txt"
    command = background_writer(marker, grows)
    answerer = ScriptedAnswerer(["allowed-once"])
    async with open_harness(composition(backend, state_dir), answerers=[answerer]) as harness:
        session = await harness.open_session(cwd=root)
        await session.set_sandbox_mode("read-only")
        granted = await session.run_tool(
            "bash",
            {
                "command": command,
                "sandbox_permissions": "workspace-write",
                "justification": "a writer in the background",
            },
        )
        assert granted.facts["granted"] == "workspace-write", granted.text
        assert granted.text.startswith("started"), granted.text
        assert marked(marker) == []
        size = grows.stat().st_size
        assert size > 0  # it really wrote while the call ran
        await trio.sleep(0.5)
        assert grows.stat().st_size == size
        # The next call runs read-only again, and nothing of the grant is left.
        after = await session.run_tool("bash", {"command": f"echo y >> {grows}"})
        assert after.facts["mode"] == "read-only" and after.facts["denied"]
    assert grows.stat().st_size == size
    assert os.path.exists(grows)
