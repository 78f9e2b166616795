"""What the in-band runner-failure protocol can and cannot prove, and the launcher's
word that closes its gap.

The runner's failure is recognised from the child's own stderr (a fatal line, and on
Landlock exit 125). The confined command writes to the same stderr, so it can mimic
that line. Where the shipped launcher execs the command (Landlock; bwrap's filter
stage) it says out of band, on a socket the command never holds, that the command
started: a command that ran is then reported as one that ran, its output shown,
whatever it printed. Without that word (an operator's runner), the mimicked line is
a FALSE ATTRIBUTION: the call raises SANDBOX_UNAVAILABLE although the sandbox worked.
Never a bypass either way: the command ran confined, nothing is retried unconfined,
and the host is unchanged. Likewise a command can print the denial text and be
reported `denied` when nothing was refused; at most that invites an escalation
request, which a person answers.
"""

from __future__ import annotations

import pytest

from stockade.errors import SandboxUnavailable
from stockade.executor.actor import open_executor
from stockade.executor.config import ExecutorConfig
from stockade.sandbox.actor import open_provider
from stockade.sandbox.config import ProviderConfig
from stockade.testing import fake_runner
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
        f"echo after; {FAKE_FATAL[sandbox.backend]}"
    )
    exit_code = 125 if sandbox.backend == "landlock" else 0
    with sandbox.battery.attempt(f"mimicked runner-failure line ({mode.value}, {via})"):
        report = await sandbox.run(command, mode, via=via)
        # Reported as what it was: a command that ran, its output and status its own
        # (the launcher said it started it, on a channel the command never held).
        assert not report.runner_failed, report
        assert (report.exit_code, report.stdout) == (exit_code, "after\n"), report
        assert "(mimicked)" in report.stderr
        if via == "job":
            assert report.state == "exited"
        # No bypass: the host is unchanged...
        assert terrain.state() == before, describe_change(before, terrain.state())
    # ...and the command ran, confined (it wrote where it may).
    assert (terrain.root / "ran").exists() == (mode is WW)


async def test_control_without_the_launchers_word_the_line_is_taken_for_the_runners(
    runner_dir, terrain
):
    """The attack is real where no launcher speaks: an operator's runner (here one that
    runs the command as it is) whose failure lines start `bwrap:` gives no word, and
    the same mimicked line makes a command that ran read as one that never did."""
    runner = fake_runner(runner_dir)
    policy = ExecutionPolicy(mode=MODES[0], workspace_root=str(terrain.root))
    config = ProviderConfig(runner_command=str(runner), runner_failure_signatures=["bwrap:"])
    async with (
        open_provider(config) as provider,
        open_executor(ExecutorConfig(kill_grace=0.5), provider) as executor,
    ):
        with pytest.raises(SandboxUnavailable) as raised:
            await executor.run(
                executor.resolve(f"echo after; {FAKE_FATAL['bwrap']}", policy=policy)
            )
    assert "(mimicked)" in raised.value.detail


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
