"""On the real kernel, through the executor: a write into a host directory under /tmp
with network off. The command sees /tmp fresh and empty (bwrap and the Landlock
launcher's namespaced tier), so its write fails as "No such file or directory"; the
result is a denial with the marker and the line that says why, and nothing is written
on the host. The control: with network on the same write is refused by the kernel (a
denial signature); the plain tier, which makes no fresh views, is refused so too. A
genuine "No such file or directory" (the host has no such path either) is not a denial.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from stockade.executor.render import render_result
from stockade.messages import ShellResult, ShellSpec
from stockade.modes import fresh_view_cause
from stockade.vocab import DENIAL_INSTRUCTION, ExecutionPolicy, Network, SandboxMode, denial_marker
from tests.support import PLAIN, executor_on

pytestmark = pytest.mark.trio

WW, RO = SandboxMode.WORKSPACE_WRITE, SandboxMode.READ_ONLY
FRESH = ["bwrap", "landlock"]  # the backends that make fresh views (not the plain tier)
ENOENT = "No such file or directory"


@pytest.fixture
def host_dir() -> Iterator[Path]:
    """A directory of the host's /tmp (as tempfile makes them), holding one file."""
    made = Path(tempfile.mkdtemp(dir="/tmp", prefix="stockade-fresh-"))
    (made / "f").write_text("host\n")
    try:
        yield made
    finally:
        shutil.rmtree(made, ignore_errors=True)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    made = tmp_path / "root"
    made.mkdir()
    return made


async def _run(
    variant: str, root: Path, command: str, network: Network, mode: SandboxMode = WW
) -> ShellResult:
    policy = ExecutionPolicy(mode=mode, workspace_root=str(root), network=network)
    async with executor_on(variant) as executor:
        result: ShellResult = await executor.run(ShellSpec(command=command, policy=policy))
    return result


@pytest.mark.parametrize("mode", [WW, RO], ids=lambda mode: mode.value)
@pytest.mark.parametrize("variant", FRESH)
async def test_a_write_into_a_host_directory_under_a_fresh_tmp_is_a_denial(
    variant: str, mode: SandboxMode, root: Path, host_dir: Path
) -> None:
    target = host_dir / "new"
    result = await _run(variant, root, f"printf x > '{target}'", Network.OFF, mode)
    assert ENOENT in result.stderr, result.stderr
    assert result.denied and result.exit_code == 1
    assert result.unseen == ((str(host_dir), "/tmp"),)
    line = fresh_view_cause(str(host_dir), "/tmp", "off")
    assert render_result(result).endswith(f"{denial_marker(mode)}\n{DENIAL_INSTRUCTION}\n{line}")
    assert not target.exists()
    # coreutils' wording of a create says the same.
    touched = await _run(variant, root, f"touch '{target}'", Network.OFF, mode)
    assert touched.denied and touched.unseen == ((str(host_dir), "/tmp"),)
    assert not target.exists()


@pytest.mark.parametrize("variant", FRESH)
async def test_the_same_write_with_network_on_is_refused_by_the_kernel(
    variant: str, root: Path, host_dir: Path
) -> None:
    target = host_dir / "new"
    result = await _run(variant, root, f"printf x > '{target}'", Network.ON)
    assert ENOENT not in result.stderr, result.stderr
    assert result.denied and result.unseen == ()
    assert render_result(result).endswith(f"{denial_marker(WW)}\n{DENIAL_INSTRUCTION}")
    assert not target.exists()


async def test_the_plain_tier_makes_no_fresh_view_and_is_refused_by_the_kernel(
    root: Path, host_dir: Path
) -> None:
    target = host_dir / "new"
    result = await _run(PLAIN, root, f"printf x > '{target}'", Network.OFF)
    assert ENOENT not in result.stderr, result.stderr
    assert result.denied and result.unseen == ()
    assert not target.exists()


@pytest.mark.parametrize("variant", FRESH)
async def test_a_read_of_a_host_file_under_a_fresh_tmp_is_a_denial(
    variant: str, root: Path, host_dir: Path
) -> None:
    # With network on the host's /tmp is readable: the fresh view is what refused it.
    result = await _run(variant, root, f"cat '{host_dir}/f'", Network.OFF)
    assert result.denied and result.unseen == ((f"{host_dir}/f", "/tmp"),)
    control = await _run(variant, root, f"cat '{host_dir}/f'", Network.ON)
    assert control.exit_code == 0 and control.stdout == "host\n" and not control.denied


@pytest.mark.parametrize("variant", FRESH)
async def test_a_genuine_missing_path_is_not_a_denial(
    variant: str, root: Path, host_dir: Path
) -> None:
    nowhere = f"/tmp/stockade-fresh-nowhere-{host_dir.name}"
    commands = [
        f"printf x > {nowhere}/new",  # the host has no such directory either
        f"cat {nowhere}",
        f"cat '{host_dir}/missing'",  # the host has the directory, not the file
        f"touch '{host_dir}/sub/new'",
        # The call's own root: what it made and removed there is its own doing.
        "printf x > own && rm own && cat own",
    ]
    for command in commands:
        result = await _run(variant, root, command, Network.OFF)
        assert ENOENT in result.stderr, (command, result.stderr)
        assert not result.denied and result.unseen == (), command
        assert "[sandbox:" not in render_result(result), command


@pytest.mark.parametrize("variant", FRESH)
async def test_the_fresh_views_themselves_are_read_only_and_the_root_in_them_writable(
    variant: str, tmp_path: Path
) -> None:
    """A fresh /tmp or /run is an empty tmpfs made read-only once what it keeps is bound
    (bwrap's --remount-ro, or the filter stage's for a root caller; the launcher's
    --fresh-dir): a write at its top is the kernel's EROFS and a denial, never a file
    that vanishes with the call, while the root kept inside /tmp stays writable. The
    control: unconfined, the same write lands on the host."""
    root = tmp_path / "root"  # beneath /tmp: kept in sight, bound back writable
    root.mkdir()
    name = f"stockade-fresh-top-{variant}-{tmp_path.name}"
    tops = [Path(top) for top in ("/tmp", "/run") if Path(top).is_dir()]
    targets = [top / name for top in tops]
    try:
        for target in targets:
            result = await _run(variant, root, f"printf x > '{target}'", Network.OFF)
            assert "Read-only file system" in result.stderr, (target, result.stderr)
            assert result.denied and result.exit_code == 1, target
            assert not target.exists()
        kept = await _run(variant, root, "printf x > ok && cat ok", Network.OFF)
        assert kept.exit_code == 0 and kept.stdout == "x", kept.stderr
        assert (root / "ok").read_text() == "x"
        control = await _run(
            variant, root, f"printf x > '{targets[0]}'", Network.OFF, SandboxMode.DANGER_FULL_ACCESS
        )
        assert control.exit_code == 0 and targets[0].read_text() == "x", control.stderr
    finally:
        for target in targets:
            target.unlink(missing_ok=True)
