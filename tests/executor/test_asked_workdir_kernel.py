"""An asked call's start is bound to the working directory the person was shown
(`ShellSpec.expected_workdir`): judged again when the command starts, in the same
step that decides where it starts, and refused (nothing runs) when it now leads
anywhere else. Real processes, both sandbox backends and an unconfined call; an
unasked spec keeps following its path as before."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import pytest

from stockade.errors import CommandStartError
from stockade.executor.actor import open_executor
from stockade.executor.config import ExecutorConfig
from stockade.messages import AskedWorkdir
from stockade.sandbox.actor import open_provider
from stockade.trust import judge_workdir
from stockade.vocab import ExecutionPolicy, SandboxMode

WW, DFA = SandboxMode.WORKSPACE_WRITE, SandboxMode.DANGER_FULL_ACCESS

# What runs: where it started, and a file written there (the effect on disk).
COMMAND = "pwd -P; echo ran > ran.txt"


def asked(path: Path) -> AskedWorkdir:
    """The directory as the bash tool judges it when it asks (`judge_workdir`)."""
    judged = judge_workdir(str(path))
    return AskedWorkdir(
        named=path.name,
        spelled=str(path),
        real=judged.real,
        device=judged.identity[0],
        inode=judged.identity[1],
    )


@pytest.fixture
def layout(scratch):
    """root/build (a real directory) and a victim outside the root."""
    root = Path(scratch) / "root"
    (root / "build").mkdir(parents=True)
    victim = Path(scratch) / "outside" / "victim"
    victim.mkdir(parents=True)
    (victim / "precious.txt").write_text("keep\n")
    return root, root / "build", victim


async def _run(backend_config, mode, root, workdir, expected):
    async with (
        open_provider(backend_config) as provider,
        open_executor(ExecutorConfig(kill_grace=0.5), provider) as executor,
    ):
        policy = ExecutionPolicy(mode=mode, workspace_root=str(root))
        spec = executor.resolve(COMMAND, policy=policy, workdir=str(workdir))
        spec = msgspec.structs.replace(spec, expected_workdir=expected)
        return await executor.run(spec)


@pytest.mark.parametrize("mode", [WW, DFA])
async def test_the_directory_that_was_shown_still_runs(backend_config, layout, mode):
    root, build, _ = layout
    result = await _run(backend_config, mode, root, build, asked(build))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[0] == str(build)
    assert (build / "ran.txt").read_text() == "ran\n"


@pytest.mark.parametrize("mode", [WW, DFA])
async def test_a_directory_swapped_for_a_symlink_after_the_question_is_refused(
    backend_config, layout, mode
):
    root, build, victim = layout
    shown = asked(build)
    build.rename(root / "build.old")
    os.symlink("../outside/victim", build)
    with pytest.raises(CommandStartError) as refused:
        await _run(backend_config, mode, root, build, shown)
    assert f"was {build} and now leads to {victim}" in str(refused.value)
    assert "call again to be asked anew" in str(refused.value)
    assert sorted(p.name for p in victim.iterdir()) == ["precious.txt"]


@pytest.mark.parametrize("mode", [WW, DFA])
async def test_a_directory_replaced_by_another_of_the_same_name_is_refused(
    backend_config, layout, mode
):
    root, build, _ = layout
    shown = asked(build)
    build.rename(root / "build.old")
    build.mkdir()
    with pytest.raises(CommandStartError, match="another directory of the same name"):
        await _run(backend_config, mode, root, build, shown)
    assert not (build / "ran.txt").exists() and not (root / "build.old" / "ran.txt").exists()


async def test_an_unasked_spec_follows_its_path_as_before(backend_config, layout):
    # Control: no question, no binding; an unconfined call goes where the path leads.
    root, build, victim = layout
    build.rename(root / "build.old")
    os.symlink("../outside/victim", build)
    result = await _run(backend_config, DFA, root, build, None)
    assert result.stdout.splitlines()[0] == str(victim)
    assert (victim / "ran.txt").exists()
