"""A session's roots swapped for a symlink after it opened, through the harness, on both
real backends: the fs tools (pinned roots) and bash (the provider) both refuse, and the
outside directory is judged on disk. Each test shows its control: a plain open through
the swapped path does write outside.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from stockade import open_harness
from stockade.sandbox.config import ProviderConfig

from .conftest import snapshot

SECRET = "secret outside\n"


def entries(backend: str, state_dir: str) -> list[dict[str, object]]:
    return [
        {"id": "sandbox", "name": "stockade.sandbox.local", "config": {"backend": backend}},
        {"id": "bash", "name": "stockade.bash.sandbox"},
        {"id": "fs", "name": "stockade.fs.sandbox"},
        {"id": "log", "name": "stockade.session.log", "config": {"state_dir": state_dir}},
    ]


@pytest.fixture
def terrain(scratch: str) -> tuple[Path, Path]:
    """A parent root P with P/child, and an outside directory holding a secret."""
    parent, outside = Path(scratch, "P"), Path(scratch, "outside")
    (parent / "child").mkdir(parents=True)
    (parent / "child" / "victim.txt").write_text("inside\n")
    outside.mkdir()
    (outside / "victim.txt").write_text(SECRET)
    return parent, outside


def control(path: Path, outside: Path) -> None:
    """Unconfined, the swap is real: a plain open through `path` writes outside."""
    (path / "control.txt").write_text("control")
    assert (outside / "control.txt").read_text() == "control"
    (path / "control.txt").unlink()


def assert_fs_refused(result, root: Path, kind: str) -> None:
    assert result.is_error and result.facts["denied"] is False, result.text
    assert f"the {kind} {root} was replaced since the session opened" in result.text
    assert "\n" not in result.text and SECRET.strip() not in result.text


def assert_bash_refused(result) -> None:
    assert result.is_error, result.text
    assert "is now reached through a symlink" in result.text and "Nothing ran" in result.text


@pytest.mark.parametrize("by", ["parent-bash", "test"])
async def test_a_child_root_swapped_by_its_parent(
    backend_config: ProviderConfig,
    state_dir_outside: str,
    terrain: tuple[Path, Path],
    by: str,
) -> None:
    parent, outside = terrain
    child = parent / "child"
    async with open_harness(
        entries(str(backend_config.backend), state_dir_outside), answerers=[]
    ) as harness:
        a = await harness.open_session(cwd=parent)
        b = await a.fork_child(cwd=child)
        assert not (await b.run_tool("write_file", {"path": "ok.txt", "content": "1"})).is_error
        if by == "parent-bash":
            swap = await a.run_tool(
                "bash", {"command": f"mv child child.old && ln -s {outside} child"}
            )
            assert child.is_symlink(), swap.text
        else:
            child.rename(parent / "child.old")
            child.symlink_to(outside)
        assert child.is_symlink()
        control(child, outside)
        before = snapshot(str(outside))
        calls = [
            ("write_file", {"path": "new.txt", "content": "pwned"}),
            ("write_file", {"path": f"{child}/victim.txt", "content": "pwned"}),
            ("edit_file", {"path": "victim.txt", "old": "secret", "new": "pwned"}),
            ("read_file", {"path": "victim.txt"}),
        ]
        for name, arguments in calls:
            assert_fs_refused(await b.run_tool(name, arguments), child, "workspace root")
        bash = await b.run_tool("bash", {"command": "echo pwned > victim.txt; echo x > n.txt"})
        assert_bash_refused(bash)
        assert snapshot(str(outside)) == before
        await b.close()
        await a.close()
    assert (outside / "victim.txt").read_text() == SECRET
    assert (parent / "child.old" / "ok.txt").read_text() == "1"


async def test_a_session_resumed_after_its_root_was_swapped(
    backend_config: ProviderConfig, state_dir_outside: str, terrain: tuple[Path, Path]
) -> None:
    """Its root comes from its log; resolving elsewhere by now, it is not pinned there."""
    parent, outside = terrain
    child = parent / "child"
    async with open_harness(
        entries(str(backend_config.backend), state_dir_outside), answerers=[]
    ) as harness:
        first = await harness.open_session(cwd=child)
        await first.close()
        child.rename(parent / "child.old")
        child.symlink_to(outside)
        control(child, outside)
        before = snapshot(str(outside))
        resumed = await harness.resume_session(first.id)
        wrote = await resumed.run_tool("write_file", {"path": "new.txt", "content": "pwned"})
        bash = await resumed.run_tool("bash", {"command": "echo pwned > n.txt"})
        await resumed.close()
    assert wrote.is_error and wrote.facts["denied"] is False, wrote.text
    assert f"the workspace root {child} could not be pinned when the session opened" in wrote.text
    assert_bash_refused(bash)
    assert snapshot(str(outside)) == before


@pytest.fixture
def tmpdir_below_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """$TMPDIR set to a directory below the temp root /tmp, for the harness to start with."""
    path = Path(tempfile.mkdtemp(prefix="stockade-tmpdir-", dir="/tmp"))
    monkeypatch.setenv("TMPDIR", str(path))
    try:
        yield path
    finally:
        if path.is_symlink():
            path.unlink()
        shutil.rmtree(path, ignore_errors=True)
        shutil.rmtree(f"{path}.old", ignore_errors=True)  # where the swap moved it


async def test_a_sessions_temp_dir_turned_into_a_symlink(
    backend_config: ProviderConfig,
    state_dir_outside: str,
    terrain: tuple[Path, Path],
    tmpdir_below_tmp: Path,
) -> None:
    """The session's temp root (its private directory, below the host's $TMPDIR) swapped
    for a symlink to an outside directory. A command cannot make that swap itself any
    more (the directory's parent is not writable in the sandbox: `mv` fails), so another
    process makes it; the fs tools and bash then refuse instead of writing outside."""
    parent, outside = terrain
    async with open_harness(
        entries(str(backend_config.backend), state_dir_outside), answerers=[]
    ) as harness:
        session = await harness.open_session(cwd=parent)
        tmpdir = Path(session.temp_dir)
        assert tmpdir.parent == tmpdir_below_tmp
        assert str(tmpdir) in session.fs_roots.temp_paths
        (tmpdir / "victim.txt").write_text("temp\n")
        swap = await session.run_tool(
            "bash", {"command": f"mv {tmpdir} {tmpdir}.old && ln -s {outside} {tmpdir}"}
        )
        assert tmpdir.is_dir() and not tmpdir.is_symlink(), swap.text  # refused inside
        tmpdir.rename(f"{tmpdir}.old")
        tmpdir.symlink_to(outside)
        control(tmpdir, outside)
        before = snapshot(str(outside))
        calls = [
            ("write_file", {"path": f"{tmpdir}/new.txt", "content": "pwned"}),
            ("write_file", {"path": f"{outside}/new.txt", "content": "pwned"}),
            ("edit_file", {"path": f"{tmpdir}/victim.txt", "old": "secret", "new": "pwned"}),
        ]
        for name, arguments in calls:
            assert_fs_refused(await session.run_tool(name, arguments), tmpdir, "temp root")
        bash = await session.run_tool("bash", {"command": f"echo pwned > {tmpdir}/victim.txt"})
        assert bash.is_error, bash.text
        assert snapshot(str(outside)) == before
        tmpdir.unlink()
        Path(f"{tmpdir}.old").rename(tmpdir)  # its own, for close to remove
        await session.close()
    assert (outside / "victim.txt").read_text() == SECRET


async def test_closing_sessions_closes_their_pinned_roots(
    state_dir_outside: str, terrain: tuple[Path, Path]
) -> None:
    """One fd per root per open session, none left once the sessions close (many of
    them, children included). No command runs, so no backend is needed."""
    parent, _ = terrain
    baseline = len(os.listdir("/proc/self/fd"))
    async with open_harness(entries("auto", state_dir_outside), answerers=[]) as harness:
        opened = len(os.listdir("/proc/self/fd"))
        for _ in range(60):
            a = await harness.open_session(cwd=parent)
            b = await a.fork_child(cwd=parent / "child")
            assert all(pin.fd >= 0 for s in (a, b) for pin in s.fs_roots.held())
            await b.close()
            await a.close()
            assert a.fs_roots.closed and b.fs_roots.closed
            assert len(os.listdir("/proc/self/fd")) == opened
    assert len(os.listdir("/proc/self/fd")) <= baseline
