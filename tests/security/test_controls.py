"""Controls for the battery: each file attack, run UNCONFINED (danger-full-access, no
backend), really changes the host state the battery judges. Without this, a typo in
an attack would pass as "stopped". Not counted as attempts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from stockade.executor.actor import ExecutorClient, open_executor
from stockade.executor.config import ExecutorConfig
from stockade.vocab import ExecutionPolicy

from .support import DFA, IS_ROOT, describe_change
from .test_files import FILE_ATTACKS, fill, prepare, start_host_process


@pytest.fixture
async def unconfined() -> AsyncIterator[ExecutorClient]:
    async with open_executor(ExecutorConfig(kill_grace=0.5)) as executor:
        yield executor


def core_dumps_land_in_the_cwd() -> bool:
    return not Path("/proc/sys/kernel/core_pattern").read_text().startswith("|")


@pytest.mark.parametrize("attack", FILE_ATTACKS, ids=lambda attack: attack.id)
async def test_the_attack_changes_the_host_when_unconfined(unconfined, terrain, attack):
    if attack.id == "coredump-in-outside-cwd" and not core_dumps_land_in_the_cwd():
        pytest.skip("kernel.core_pattern pipes cores to a helper: no core lands in the cwd")
    if attack.id == "host-dev" and not IS_ROOT:
        pytest.skip("only root can write the host's /dev unconfined")
    prepare(terrain)
    host = start_host_process(terrain) if attack.host_process else None
    try:
        before = terrain.state(with_root=True)
        residue_before = terrain.residue()
        command = fill(attack.command, terrain, SP=host.pid if host else "")
        policy = ExecutionPolicy(mode=DFA, workspace_root=str(terrain.root))
        result = await unconfined.run(unconfined.resolve(command, policy=policy))
        assert result.backend == "none" and result.enforcement is None
        after = terrain.state(with_root=True)
        changed = after != before or terrain.residue() != residue_before
        assert changed, f"{attack.id} is not a real attack:\n{result.stdout}{result.stderr}"
        if attack.host_process:
            assert "ptrace: DONE" in result.stdout and "open-mem: DONE" in result.stdout
            assert describe_change(before, after)
    finally:
        if host is not None:
            host.kill()
            host.wait()
