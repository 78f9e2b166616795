"""What the in-band runner-failure protocol can and cannot prove.

The runner's failure is recognised from the child's own stderr (a fatal line, and on
Landlock exit 125). The confined command writes to the same stderr, so it can mimic
that line. The result is a FALSE ATTRIBUTION: the call raises SANDBOX_UNAVAILABLE (a
job is stamped runner-failed) although the sandbox worked. It is never a bypass: the
command ran confined, nothing is retried unconfined, and the host is unchanged.
Likewise a command can print the denial text and be reported `denied` when nothing
was refused; at most that invites an escalation request, which a person answers.
"""

from __future__ import annotations

import pytest

from stockade.errors import SandboxUnavailable
from stockade.executor.actor import open_executor
from stockade.executor.config import ExecutorConfig
from stockade.sandbox.actor import open_provider
from stockade.vocab import ExecutionPolicy

from ..support import require_backend
from .support import MODES, WW, describe_change

FAKE_FATAL = {
    "bwrap": "echo 'bwrap: Can'\\''t mount proc on /newroot/proc: (mimicked)' >&2",
    "landlock": "echo 'landlock-run: cannot enforce the Landlock ruleset: (mimicked)' >&2; exit 125",
}


@pytest.mark.parametrize("via", ["run", "job"])
@pytest.mark.parametrize("mode", MODES, ids=lambda mode: mode.value)
async def test_a_command_mimicking_the_runners_failure_gains_nothing(sandbox, mode, via):
    terrain = sandbox.terrain
    before = terrain.state()
    command = (
        f"echo pwned > {terrain.victim}; echo ran > {terrain.root}/ran 2>/dev/null; "
        + FAKE_FATAL[sandbox.backend]
    )
    with sandbox.battery.attempt(f"mimicked runner-failure line ({mode.value}, {via})"):
        if via == "run":
            with pytest.raises(SandboxUnavailable) as raised:
                await sandbox.run(command, mode)
            assert "(mimicked)" in raised.value.detail
        else:
            report = await sandbox.run(command, mode, via="job")
            assert report.state == "runner-failed" and report.runner_failed
            assert not report.denied
        # No bypass: the host is unchanged...
        assert terrain.state() == before, describe_change(before, terrain.state())
    # ...and the attribution is false: the command ran, confined (it wrote where it may).
    assert (terrain.root / "ran").exists() == (mode is WW)


@pytest.fixture
def landlock_config():
    return require_backend("landlock")


async def test_landlocks_exit_gate_keeps_a_lone_fatal_line_an_ordinary_result(
    landlock_config, terrain
):
    """Landlock's rule needs exit 125 AND a fatal line; the exact partial notice never counts.
    (bwrap's rule has no exit gate: a `bwrap:` line alone is its evidence.)"""
    policy = ExecutionPolicy(mode=MODES[0], workspace_root=str(terrain.root))
    async with (
        open_provider(landlock_config) as provider,
        open_executor(ExecutorConfig(kill_grace=0.5), provider) as executor,
    ):
        lone = await executor.run(
            executor.resolve(f"{FAKE_FATAL['landlock'].rsplit(';', 1)[0]}; exit 3", policy=policy)
        )
        notice = await executor.run(
            executor.resolve(
                "echo 'landlock-run: partial enforcement (older Landlock ABI)' >&2; exit 125",
                policy=policy,
            )
        )
    assert (lone.runner_failed, lone.exit_code) == (False, 3)
    assert (notice.runner_failed, notice.exit_code) == (False, 125)


@pytest.mark.parametrize("mode", MODES, ids=lambda mode: mode.value)
async def test_a_mimicked_denial_is_only_a_claim(sandbox, mode):
    """Not an attempt: the fact the doc states. The text alone sets `denied`."""
    signature = {"bwrap": "Read-only file system", "landlock": "Permission denied"}[sandbox.backend]
    result = await sandbox.run(f"echo 'x: {signature}' >&2; true", mode)
    assert result.denied and result.exit_code == 0
