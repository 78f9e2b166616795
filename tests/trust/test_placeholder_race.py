"""Placeholders shared by several stockade processes on one root (bwrap).

A missing protected path (`.vscode`, `stockade.yml`) is blocked by a mount over an
empty placeholder on the host. Removing that placeholder on the host detaches the
mount in every sandbox that uses it (the control shows it: the sandbox can then plant
`.vscode/settings.json`, which an editor runs tasks from). So a stockade process must never remove a placeholder another
process's sandbox still uses: each holds it, the last one removes it
(sandbox/placeholders.py). Judged on the host: no plant, no placeholder left.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from pathlib import Path

import pytest
import trio

from stockade import open_harness
from stockade.sandbox import placeholders
from stockade.sandbox.actor import open_provider
from stockade.vocab import SandboxMode, SandboxPolicy

from ..support import require_backend
from ._support import STOCKADE, Area, composition

# Waits for GO (outside the root, visible read-only), then tries to plant editor
# settings in the workspace, where `.vscode` is missing and therefore blocked. (The
# root's `.git` is no placeholder: a new repository is held when the call ends.)
PLANT = (
    "touch {ready}; while [ ! -e {go} ]; do sleep 0.02; done; "
    "mkdir -p .vscode && echo pwned > .vscode/settings.json && echo PLANTED"
)


def _plant(area: Area) -> str:
    return PLANT.format(ready=area.root / "READY", go=area.outside / "GO")


def _wait_for(path: Path, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


async def _wait_for_async(path: Path, seconds: float = 30.0) -> None:
    with trio.fail_after(seconds):
        while not path.exists():
            await trio.sleep(0.02)


def _remove_while_running(argv: tuple[str, ...], area: Area) -> str:
    process = subprocess.Popen(
        argv, cwd=area.root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        _wait_for(area.root / "READY")
        os.rmdir(area.root / ".vscode")  # bwrap made it; nobody held it
        (area.outside / "GO").touch()
        out, _ = process.communicate(timeout=30)
    finally:
        process.kill()
    return out


def _hook(area: Area) -> Path:
    return area.root / ".vscode" / "settings.json"


async def test_control_removing_a_placeholder_on_the_host_unblocks_a_running_sandbox(
    area: Area,
):
    """The attack is real: the same bwrap argv, its placeholder removed on the host
    while it runs (what a careless second process would do), plants the hook."""
    config = require_backend("bwrap")
    async with open_provider(config) as provider:
        wrapped = await provider.confine(
            ("bash", "-c", _plant(area)),
            SandboxPolicy(SandboxMode.WORKSPACE_WRITE, str(area.root)),
        )
    made = [path for path in wrapped.blockers if not os.path.lexists(path)]
    try:
        out = await trio.to_thread.run_sync(_remove_while_running, wrapped.argv, area)
    finally:
        # bwrap made the mount points nobody held, the temp root's too: remove them.
        for path in made:
            if os.path.isdir(path) and not os.path.islink(path):
                with contextlib.suppress(OSError):
                    os.rmdir(path)
            elif os.path.isfile(path) and os.path.getsize(path) == 0:
                os.unlink(path)
    assert "PLANTED" in out, out
    assert _hook(area).is_file(), "the control did not plant"


async def test_another_process_never_pulls_a_placeholder_out_from_under_a_job(
    area: Area, state_dir: str
):
    """A background job waits in its sandbox while other stockade processes on the
    same root start and finish calls (each holds, lets go and tries to remove the
    placeholders); the job's later plant is still refused."""
    require_backend("bwrap")
    async with open_harness(composition(state_dir, backend="bwrap")) as harness:
        session = await harness.open_session(cwd=area.root)
        await session.set_sandbox_mode("workspace-write")
        started = await session.run_tool("bash", {"command": _plant(area), "background": True})
        job_id = started.facts["job_id"]
        await _wait_for_async(area.root / "READY")
        for verb in ("run", "exec"):
            done = await trio.to_thread.run_sync(
                lambda verb=verb: subprocess.run(
                    [
                        *STOCKADE,
                        verb,
                        "--backend",
                        "bwrap",
                        "--mode",
                        "workspace-write",
                        "--root",
                        str(area.root),
                        "true",
                    ],
                    cwd=area.root,
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
            )
            assert done.returncode == 0, done.stdout + done.stderr
            assert (area.root / ".vscode").is_dir(), f"{verb} removed a placeholder in use"
        (area.outside / "GO").touch()
        report = await session.shell.wait(job_id)
        await session.close()
    said = report.stdout + report.stderr
    assert not _hook(area).exists(), said
    assert "PLANTED" not in said and "Read-only file system" in said, said
    # The last holder removed them: nothing is left in the workspace but the marker.
    assert sorted(os.listdir(area.root)) == ["READY"]


def test_stockade_exec_holds_its_placeholders_and_never_hands_them_to_the_command(
    area: Area,
):
    """exec's locks live in exec, not in the command: a sweep while it runs leaves the
    placeholder, the command holds no descriptor of it, and exec removes it once bwrap
    is done."""
    require_backend("bwrap")
    command = f"ls -l /proc/self/fd/ > {area.root}/fds; {_plant(area)}"
    process = subprocess.Popen(
        [
            *STOCKADE,
            "exec",
            "--backend",
            "bwrap",
            "--mode",
            "workspace-write",
            "--root",
            str(area.root),
            "bash",
            "-c",
            command,
        ],
        cwd=area.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        _wait_for(area.root / "READY")
        for name in (".vscode", "stockade.yml"):
            assert placeholders.sweep(str(area.root / name))
            assert os.path.lexists(area.root / name), f"{name} was removed while in use"
        (area.outside / "GO").touch()
        out, _ = process.communicate(timeout=30)
    finally:
        process.kill()
    assert not _hook(area).exists() and "Read-only file system" in out, out
    fds = (area.root / "fds").read_text()
    assert str(area.root / ".vscode") not in fds and "stockade.yml" not in fds, fds
    for name in (".vscode", "stockade.yml"):
        assert not os.path.lexists(area.root / name), f"exec left {name}"


@pytest.mark.parametrize("mode", ["workspace-write", "read-only"])
def test_many_processes_on_one_root_all_run_and_leave_nothing(area: Area, mode: str):
    """16 `stockade run` at once on one root: each makes, holds, lets go of and tries
    to remove the same placeholders; none may fail to set up its sandbox."""
    require_backend("bwrap")
    runs = [
        subprocess.Popen(
            [
                *STOCKADE,
                "run",
                "--json",
                "--backend",
                "bwrap",
                "--mode",
                mode,
                "--root",
                str(area.root),
                "test ! -e .git/hooks",
            ],
            cwd=area.root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(16)
    ]
    for process in runs:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, out + err
    assert os.listdir(area.root) == []
