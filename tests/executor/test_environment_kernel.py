"""The environment policy on real commands, both backends: judged by what `env` printed
inside, in every mode, in a background job, and under a granted escalation."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from stockade import open_harness
from stockade.approval.answerers import ScriptedAnswerer
from stockade.executor.actor import open_executor
from stockade.executor.config import ExecutorConfig
from stockade.executor.environment import EnvPolicy

from ..executor.test_executor_kernel import executor_for, spec
from ..support import require_backend

DFA_NAME = "danger-full-access"
SECRETS = {
    "OPENAI_API_KEY": "sk-test-openai",
    "PGPASSWORD": "pg-test-password",
    "AWS_SECRET_ACCESS_KEY": "aws-test-secret",
    "STORE_DSN": "postgresql://u:dsn-test-pw@h/db",
    "STOCKADE_TEST_SECRET_ENV": "stockade-own-test",
    "GITHUB_TOKEN": "ghp-test-token",
}


def seen(stdout: str) -> dict[str, str]:
    """`env -0`'s output as a mapping (a value may hold newlines)."""
    pairs = [item.split("=", 1) for item in stdout.split("\0") if "=" in item]
    return {name: value for name, value in pairs}


@pytest.fixture
def secrets(monkeypatch):
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("ENVTEST_ORDINARY", "kept")
    return SECRETS


def assert_clean(stdout: str, dropped: tuple[str, ...]) -> dict[str, str]:
    inside = seen(stdout)
    for name, value in SECRETS.items():
        assert name not in inside, name
        assert value not in stdout, name
        assert name in dropped, name
    # Ordinary work: PATH and HOME and the harmless names pass.
    assert inside["ENVTEST_ORDINARY"] == "kept"
    assert inside["PATH"] and inside.get("HOME")
    for value in SECRETS.values():
        assert value not in repr(dropped)
    return inside


@pytest.mark.parametrize("mode", ["read-only", "workspace-write", DFA_NAME])
async def test_every_mode_drops_the_secrets_and_keeps_ordinary_work(
    backend_config, scratch, secrets, mode
):
    from stockade.vocab import SandboxMode

    async with executor_for(backend_config) as executor:
        result = await executor.run(
            spec(executor, "env -0 && command -v ls >/dev/null", SandboxMode.parse(mode), scratch)
        )
    assert result.exit_code == 0, result.stderr
    assert_clean(result.stdout, result.env_dropped)
    assert result.mode.value == mode


async def test_a_background_job_drops_them_and_its_report_lists_them(
    backend_config, scratch, secrets
):
    from stockade.vocab import SandboxMode

    async with executor_for(backend_config) as executor:
        handle = await executor.start(spec(executor, "env -0", SandboxMode.READ_ONLY, scratch))
        with trio.fail_after(20):
            report = await executor.wait(handle.id)
    assert report.exit_code == 0, report.stderr
    assert_clean(report.stdout, report.env_dropped)


async def test_exclude_include_only_and_set_reach_the_command(backend_config, scratch, secrets):
    from stockade.vocab import SandboxMode

    policy = EnvPolicy(
        exclude=("ENVTEST_*",),
        set={"ENVTEST_SET": "from-set", "OPENAI_API_KEY": "operator-value"},
        include_only=("PATH", "HOME", "ENVTEST_*", "OPENAI_API_KEY"),
    )
    config = ExecutorConfig(kill_grace=0.5, env=policy)
    async with executor_for(backend_config, config) as executor:
        result = await executor.run(spec(executor, "env -0", SandboxMode.READ_ONLY, scratch))
    inside = seen(result.stdout)
    assert result.exit_code == 0, result.stderr
    # exclude dropped ENVTEST_ORDINARY; set added ENVTEST_SET and an operator's own key
    # value; include_only kept only its names (TMPDIR is the executor's, laid over).
    assert inside["ENVTEST_SET"] == "from-set"
    assert inside["OPENAI_API_KEY"] == "operator-value"
    assert "ENVTEST_ORDINARY" not in inside and "ENVTEST_ORDINARY" in result.env_dropped
    assert set(inside) - {"TMPDIR", "PWD", "SHLVL", "_"} == {
        "PATH",
        "HOME",
        "ENVTEST_SET",
        "OPENAI_API_KEY",
    }
    assert "sk-test-openai" not in result.stdout


async def test_inherit_none_still_runs_the_command(backend_config, scratch, secrets):
    from stockade.vocab import SandboxMode

    config = ExecutorConfig(kill_grace=0.5, env=EnvPolicy(inherit="none"))
    async with executor_for(backend_config, config) as executor:
        result = await executor.run(
            spec(executor, "env -0; ls / >/dev/null", SandboxMode.READ_ONLY, scratch)
        )
    assert result.exit_code == 0, result.stderr
    assert set(seen(result.stdout)) <= {"TMPDIR", "PWD", "SHLVL", "_"}
    assert "PATH" in result.env_dropped


async def test_the_local_executor_drops_them_too(scratch, secrets):
    async with open_executor(ExecutorConfig(kill_grace=0.5), None) as executor:
        result = await executor.run(executor.resolve("env -0", workdir=scratch))
    assert result.exit_code == 0, result.stderr
    assert_clean(result.stdout, result.env_dropped)


@pytest.mark.parametrize("backend", ["bwrap", "landlock"])
async def test_a_granted_escalation_drops_them(backend, scratch, secrets, tmp_path_factory):
    require_backend(backend)
    root = Path(scratch) / "project"
    root.mkdir()
    state = tmp_path_factory.mktemp("state", numbered=True)
    state_dir = Path("/var/tmp") / f"stockade-state-env-{state.name}"
    state_dir.mkdir()
    entries = [
        {"id": "sandbox", "name": "stockade.sandbox.local", "config": {"backend": backend}},
        {"id": "bash", "name": "stockade.bash.sandbox"},
        {"id": "approval", "name": "stockade.approval.user"},
        {"id": "log", "name": "stockade.session.log", "config": {"state_dir": str(state_dir)}},
    ]
    command = "env -0 > seen.env; env -0"
    try:
        answerer = ScriptedAnswerer(["allowed-once"])
        async with open_harness(entries, answerers=[answerer]) as harness:
            session = await harness.open_session(cwd=root)
            await session.set_sandbox_mode("read-only")
            denied = await session.run_tool("bash", {"command": command})
            granted = await session.run_tool(
                "bash",
                {
                    "command": command,
                    "sandbox_permissions": "workspace-write",
                    "justification": "writes seen.env",
                },
            )
    finally:
        import shutil

        shutil.rmtree(state_dir, ignore_errors=True)
    assert denied.facts["denied"]
    assert granted.facts["granted"] == "workspace-write", granted.text
    written = (root / "seen.env").read_text()
    assert_clean(written, tuple(granted.facts["env_dropped"]))
    assert sorted(SECRETS) == sorted(set(SECRETS) & set(granted.facts["env_dropped"]))


async def test_withheld_secrets_are_dropped_under_the_loosest_policy_in_a_job(
    backend_config, scratch, secrets, monkeypatch
):
    """The harness's own secrets (ExecutorConfig.withheld) go whatever the policy keeps:
    by name (PGPASSWORD), and by value under a name nothing excludes (LOG_URL)."""
    from stockade.executor.environment import Withheld
    from stockade.vocab import SandboxMode

    dsn = "host=127.0.0.1 user=log dbname=log password=withheld-dsn-pw"
    monkeypatch.setenv("LOG_URL", dsn)
    loosest = EnvPolicy(keep_default_excludes=False, include_only=("*",))
    config = ExecutorConfig(kill_grace=0.5, env=loosest).withholding(
        Withheld(("PGPASSWORD",), (dsn,))
    )
    async with executor_for(backend_config, config) as executor:
        handle = await executor.start(spec(executor, "env -0", SandboxMode.READ_ONLY, scratch))
        with trio.fail_after(20):
            report = await executor.wait(handle.id)
    assert report.exit_code == 0, report.stderr
    inside = seen(report.stdout)
    assert "PGPASSWORD" not in inside and "LOG_URL" not in inside
    assert "withheld-dsn-pw" not in report.stdout and "pg-test-password" not in report.stdout
    assert {"PGPASSWORD", "LOG_URL"} <= set(report.env_dropped)
    # Only the withheld go: with the default excludes off, the rest of the policy holds.
    assert inside["OPENAI_API_KEY"] == SECRETS["OPENAI_API_KEY"]
    assert "STOCKADE_TEST_SECRET_ENV" not in inside  # stockade's own, always
