"""A composition that cannot confine (`stockade.bash.local`) tells the truth.

Its only true mode is danger-full-access: every path that would make a session
resolve to a confining mode (a switch, a preset, a resumed or seeded log) refuses
with SANDBOX_UNAVAILABLE and writes nothing, and the policy message says commands
run WITHOUT a sandbox. Judged by effects: the session log on disk and the files.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stockade import InvalidPolicy, SandboxUnavailable, StockadeError, open_harness
from stockade.policy import PolicyDefaults, SandboxModeSet, SandboxNotMounted
from stockade.vocab import SandboxMode

from .conftest import composition

FIX = "mount 'stockade.bash.sandbox' as the executor beside a 'stockade.sandbox.local'"


def local(state_dir: str, **kwargs):
    return composition(state_dir, executor="local", **kwargs)


def log_text(state_dir: str, session_id: str) -> str:
    return (Path(state_dir) / f"{session_id}.jsonl").read_text()


def assert_refusal(error: BaseException, what: str) -> None:
    assert isinstance(error, SandboxNotMounted)
    assert isinstance(error, SandboxUnavailable) and isinstance(error, InvalidPolicy)
    assert isinstance(error, StockadeError)
    assert error.code == "SANDBOX_UNAVAILABLE"
    message = str(error)
    assert message.startswith(f"SANDBOX_UNAVAILABLE: {what} cannot be honoured")
    assert "this composition runs commands without a sandbox" in message
    assert "its executor 'stockade.bash.local' does not confine" in message
    assert FIX in message


@pytest.mark.parametrize("mode", ["read-only", "workspace-write"])
async def test_a_confining_mode_is_refused_and_nothing_is_logged(state_dir, scratch, mode):
    project = Path(scratch)
    async with open_harness(local(state_dir)) as harness:
        assert harness.confines is False
        session = await harness.open_session(cwd=project)
        before = log_text(state_dir, session.id)
        with pytest.raises(SandboxNotMounted) as refused:
            await session.set_sandbox_mode(mode)
        assert_refusal(refused.value, f"sandbox mode {mode!r}")
        # Nothing was switched: the log is as it was, and the session still says what runs.
        assert log_text(state_dir, session.id) == before
        assert "sandbox/mode" not in log_text(state_dir, session.id)
        assert await session.sandbox_mode() is SandboxMode.DANGER_FULL_ACCESS
        # The one true mode can still be pinned.
        assert await session.set_sandbox_mode("danger-full-access") is not None


async def test_the_policy_message_says_commands_run_without_a_sandbox(state_dir, scratch):
    async with open_harness(local(state_dir)) as harness:
        session = await harness.open_session(cwd=scratch)
        context = await session.pre_step()
        assert context is not None
        text = context.text
        assert "WITHOUT a sandbox" in text
        assert "no file effect is ever refused" in text
        assert "Sandbox: none. Sandbox mode: danger-full-access" in text
        assert "kernel refuses" not in text and "denied" not in text
        # What the message says is what happens: a write anywhere the user can write.
        wrote = await session.run_tool("bash", {"command": "echo hi > told.txt"})
        assert wrote.facts["backend"] == "none" and wrote.facts["denied"] is False
    assert (Path(scratch) / "told.txt").read_text() == "hi\n"


async def test_a_confining_sandboxed_message_is_unchanged(state_dir, scratch):
    # The sandboxed product path keeps its message (the kernel refuses).
    async with open_harness(composition(state_dir)) as harness:
        session = await harness.open_session(cwd=scratch)
        await session.set_sandbox_mode("read-only")
        context = await session.pre_step()
        assert "the kernel refuses every file write" in context.text
        assert "WITHOUT a sandbox" not in context.text


@pytest.mark.parametrize("preset", ["workspace-write"])
async def test_a_preset_naming_a_confining_mode_is_refused(state_dir, scratch, preset):
    async with open_harness(local(state_dir)) as harness:
        session = await harness.open_session(cwd=scratch)
        before = log_text(state_dir, session.id)
        with pytest.raises(SandboxNotMounted) as refused:
            await session.select_preset(preset)
        assert_refusal(refused.value, f"preset {preset!r} (sandbox mode 'workspace-write')")
        assert log_text(state_dir, session.id) == before
        # The unconfined preset is true here, and selecting it works.
        selected = await session.select_preset("danger-full-access")
        assert [event.tag for event in selected] == ["permission/preset", "approval/policy"]
        assert "sandbox/mode" not in log_text(state_dir, session.id)


async def test_a_refused_mode_leaves_the_command_where_it_said(state_dir, scratch):
    # The refused switch happens before any command: a caller that meant "read-only,
    # then run" gets the error at the switch, so the write never runs under a lie.
    project = Path(scratch)
    async with open_harness(local(state_dir)) as harness:
        session = await harness.open_session(cwd=project)

        async def read_only_then_write() -> None:
            await session.set_sandbox_mode("read-only")
            await session.run_tool("bash", {"command": "echo hi > hello.txt"})

        with pytest.raises(SandboxNotMounted):
            await read_only_then_write()
    assert not (project / "hello.txt").exists()


async def test_resuming_a_confined_session_under_an_unconfined_composition_is_refused(
    state_dir, scratch
):
    async with open_harness(composition(state_dir)) as confined:
        session = await confined.open_session(cwd=scratch)
        await session.set_sandbox_mode("read-only")
        session_id = session.id
        await session.close()
    before = log_text(state_dir, session_id)
    async with open_harness(local(state_dir)) as unconfined:
        with pytest.raises(SandboxNotMounted) as refused:
            await unconfined.resume_session(session_id)
        assert_refusal(refused.value, f"session {session_id!r}'s sandbox mode")
        # A session under its default resumes fine.
        other = await unconfined.open_session(cwd=scratch)
        assert await other.sandbox_mode() is SandboxMode.DANGER_FULL_ACCESS
    assert log_text(state_dir, session_id) == before
    # The confined composition can still resume it, unchanged.
    async with open_harness(composition(state_dir)) as confined:
        again = await confined.resume_session(session_id)
        assert await again.sandbox_mode() is SandboxMode.READ_ONLY


async def test_a_log_naming_a_confining_mode_never_runs_a_command_under_it(state_dir, scratch):
    """A confining mode that reached the log without a write path (edited by hand):
    fork_child refuses to seed it, pre_step refuses to tell it, and bash runs nothing."""
    project = Path(scratch)
    async with open_harness(local(state_dir)) as harness:
        session = await harness.open_session(cwd=project)
        await session.session.append(SandboxModeSet(mode=SandboxMode.READ_ONLY))
        with pytest.raises(SandboxNotMounted) as refused:
            await session.fork_child()
        assert_refusal(refused.value, f"the sandbox mode inherited from session {session.id!r}")
        assert sorted(Path(state_dir).glob("*.jsonl")) == [Path(state_dir) / f"{session.id}.jsonl"]
        with pytest.raises(SandboxNotMounted):
            await session.pre_step()
        result = await session.run_tool("bash", {"command": "echo hi > lied.txt"})
        assert result.is_error
        assert result.text.startswith("SANDBOX_UNAVAILABLE: sandbox mode 'read-only'")
        assert "the command did not run" in result.text
        assert '"context/policy"' not in log_text(state_dir, session.id)
    assert not (project / "lied.txt").exists()


def test_defaults_cannot_name_a_confining_mode_without_confinement(scratch):
    with pytest.raises(SandboxNotMounted):
        PolicyDefaults(sandbox_mode="read-only", fallback_root=scratch, unconfined="no bash")
    unconfined = PolicyDefaults(
        sandbox_mode="danger-full-access", fallback_root=scratch, unconfined="no bash"
    )
    assert unconfined.confines is False
    assert PolicyDefaults(fallback_root=scratch).confines is True


async def test_a_composition_without_an_executor_entry_says_why(state_dir, scratch):
    entries = [
        {"id": "sandbox", "name": "stockade.sandbox.local"},
        {"id": "log", "name": "stockade.session.log", "config": {"state_dir": state_dir}},
    ]
    async with open_harness(entries) as harness:
        session = await harness.open_session(cwd=scratch)
        with pytest.raises(SandboxNotMounted) as refused:
            await session.set_sandbox_mode("workspace-write")
        assert "it mounts no executor entry" in str(refused.value)
        assert FIX in str(refused.value)
        assert "WITHOUT a sandbox" in (await session.pre_step()).text
