"""The Landlock launcher: replacing the launcher file on disk after a harness started
does not change what the harness runs. The launcher is a copy outside /tmp (so the
test may overwrite it); the harness probes it, runs one call, then the copy becomes a
pass-through script and the next read-only call aims outside the roots.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from stockade import open_harness
from stockade.sandbox import _probe
from stockade.sandbox.backends import landlock

from ..support import require_backend
from ._support import DENIED_RO, Area, bwrap_like_argv, composition, pass_through


def replace_in_place(path: Path, text: str) -> None:
    """Overwrite `path` with `text` keeping its inode, size and times (padded with a
    comment), so nothing but its content and ctime tell the change."""
    info = path.stat()
    data = text.encode()
    assert len(data) < info.st_size
    data += b"#" * (info.st_size - len(data) - 1) + b"\n"
    with open(path, "r+b") as handle:
        handle.write(data)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        info.st_ino,
        info.st_size,
        info.st_mtime_ns,
    )


def replace_by_rename(path: Path, text: str) -> None:
    fresh = path.with_name(path.name + ".new")
    fresh.write_text(text)
    fresh.chmod(0o755)
    os.replace(fresh, path)


REPLACERS = {"in-place": replace_in_place, "rename": replace_by_rename}


@pytest.fixture
def launcher_copy(area: Area, monkeypatch) -> Path:
    require_backend("landlock")
    real = _probe.launcher_path()
    copy = area.tools / "landlock-run"
    shutil.copy2(real, copy)
    copy.chmod(0o755)
    monkeypatch.setattr(_probe, "launcher_path", lambda: str(copy))
    return copy


async def run_then_replace(area: Area, state_dir, copy: Path, replace) -> dict:
    """One call on the launcher as probed, replace it, then a read-only call aimed out."""
    target = area.target()
    async with open_harness(composition(state_dir, backend="landlock")) as harness:
        session = await harness.open_session(cwd=area.root)
        first = await session.run_tool("bash", {"command": "echo first > first.txt"})
        assert first.facts.get("exit_code") == 0 and first.facts["backend"] == "landlock", (
            first.text
        )
        replace(copy, pass_through(area.fake_log))
        await session.set_sandbox_mode("read-only")
        result = await session.run_tool("bash", {"command": f"touch {target}"})
    assert not target.exists(), f"the replaced launcher ran the command bare: {result.text}"
    assert not area.fake_log.exists(), "the replaced launcher ran"
    return {"text": result.text, "is_error": result.is_error, **result.facts}


def assert_replaced_launcher_really_runs_bare(area: Area, copy: Path) -> None:
    control = area.target("control")
    ran = subprocess.run(bwrap_like_argv(str(copy), "touch", str(control)), check=False)
    assert ran.returncode == 0 and control.exists(), "control: the replacement is not bare"


@pytest.mark.parametrize("how", sorted(REPLACERS))
async def test_a_replaced_launcher_changes_nothing_the_harness_runs(
    area: Area, state_dir, launcher_copy: Path, how
):
    """The harness execs a sealed in-memory copy: the read-only call is still denied
    by the real launcher, with its claim."""
    result = await run_then_replace(area, state_dir, launcher_copy, REPLACERS[how])
    assert result["denied"] is True and DENIED_RO in result["text"], result
    assert result["enforcement"] == "full", result
    assert_replaced_launcher_really_runs_bare(area, launcher_copy)


@pytest.mark.parametrize("how", sorted(REPLACERS))
async def test_a_replaced_launcher_is_caught_without_a_sealed_copy(
    area: Area, state_dir, launcher_copy: Path, monkeypatch, how
):
    """Where the kernel refuses to run a memfd (vm.memfd_noexec=2), the harness runs
    the file itself, pinned by identity: a replacement must be refused (nothing runs)
    or never used, even one that keeps the inode, size and mtime."""
    monkeypatch.setattr(landlock, "sealed_copy", lambda path, timeout: None)
    result = await run_then_replace(area, state_dir, launcher_copy, REPLACERS[how])
    if result["is_error"]:
        assert "SANDBOX_UNAVAILABLE" in result["text"], result
        assert str(launcher_copy) in result["text"], result
    else:
        assert result["denied"] is True and DENIED_RO in result["text"], result
    assert_replaced_launcher_really_runs_bare(area, launcher_copy)
