"""The harness as an agent embeds it: schemas, sessions, per-call policy, the log."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import trio

from stockade import ConfigError, open_harness
from stockade.tools.events import ToolCalled, ToolResulted

from .conftest import composition

REPO = Path(__file__).resolve().parents[2]


def props(schema):
    return set(schema["parameters"]["properties"])


async def test_escalation_fields_exist_exactly_when_the_executor_confines(state_dir):
    async with open_harness(composition(state_dir)) as confined:
        bash = confined.tool_schemas()[0]
        assert {"sandbox_permissions", "justification"} <= props(bash)
        assert bash["parameters"]["properties"]["sandbox_permissions"]["enum"] == [
            "read-only",
            "workspace-write",
            "danger-full-access",
            "with_network",
        ]
    async with open_harness(composition(state_dir, executor="local", approval=False)) as local:
        bash = local.tool_schemas()[0]
        assert props(bash) == {"command", "workdir", "timeout_ms", "background"}
        assert local.confines is False


async def test_two_sessions_resolve_their_own_roots(state_dir, projects):
    a, b = projects
    async with open_harness(composition(state_dir)) as harness:
        first = await harness.open_session(cwd=a)
        second = await harness.open_session(cwd=b)
        assert (await first.execution_policy()).workspace_root == str(a)
        assert (await second.execution_policy()).workspace_root == str(b)
        own = await first.run_tool("bash", {"command": "echo a > mine"})
        neighbour = await first.run_tool("bash", {"command": f"echo a > {b}/theirs"})
        assert not own.is_error and own.facts["denied"] is False
        assert neighbour.facts["denied"] is True
        assert "[sandbox: file access denied under workspace-write mode]" in neighbour.text
    assert (a / "mine").read_text() == "a\n"
    assert not (b / "theirs").exists()


async def test_a_call_keeps_its_stamped_policy_while_the_session_switches(state_dir, projects):
    a, _ = projects
    async with open_harness(composition(state_dir)) as harness:
        session = await harness.open_session(cwd=a)
        results = {}

        async def slow_write():
            results["slow"] = await session.run_tool(
                "bash", {"command": "sleep 0.5; echo late > late.txt"}
            )

        async with trio.open_nursery() as nursery:
            nursery.start_soon(slow_write)
            await trio.sleep(0.2)
            await session.set_sandbox_mode("read-only")
        after = await session.run_tool("bash", {"command": "echo next > next.txt"})
    assert results["slow"].facts["mode"] == "workspace-write"
    assert (a / "late.txt").read_text() == "late\n"
    assert after.facts["mode"] == "read-only" and after.facts["denied"] is True
    assert not (a / "next.txt").exists()


async def test_every_call_and_result_is_logged(state_dir, projects):
    a, _ = projects
    async with open_harness(composition(state_dir)) as harness:
        session = await harness.open_session(cwd=a)
        result = await session.run_tool("bash", {"command": "echo hi"}, call_id="call-7")
        events = await session.events()
    calls = [e for e in events if isinstance(e, ToolCalled)]
    results = [e for e in events if isinstance(e, ToolResulted)]
    assert [(c.call_id, c.name, c.arguments) for c in calls] == [
        ("call-7", "bash", {"command": "echo hi"})
    ]
    assert [(r.call_id, r.text) for r in results] == [("call-7", result.text)]
    assert results[0].facts.get("exit_code") == 0
    log_file = Path(state_dir) / f"{session.id}.jsonl"
    assert '"type":"tool/call"' in log_file.read_text()


async def test_bad_arguments_get_a_clear_text_and_run_nothing(state_dir, projects):
    a, _ = projects
    marker = a / "ran"
    cases = [
        {"command": 7},
        {},
        {"command": f"touch {marker}", "extra": 1},
        {"command": f"touch {marker}", "timeout_ms": -5},
        {"command": f"touch {marker}", "sandbox_permissions": "root"},
        {"command": f"touch {marker}", "justification": "no permissions given"},
        {"command": f"touch {marker}", "sandbox_permissions": "danger-full-access"},
    ]
    async with open_harness(composition(state_dir)) as harness:
        session = await harness.open_session(cwd=a)
        for arguments in cases:
            result = await session.run_tool("bash", arguments)
            assert result.is_error, arguments
            assert "Traceback" not in result.text
        unknown = await session.run_tool("rm_rf", {})
    assert not marker.exists()
    assert "unknown tool 'rm_rf'" in unknown.text


async def test_background_jobs_belong_to_their_session(state_dir, projects):
    a, b = projects
    async with open_harness(composition(state_dir)) as harness:
        first = await harness.open_session(cwd=a)
        second = await harness.open_session(cwd=b)
        started = await first.run_tool("bash", {"command": "echo bg", "background": True})
        job_id = started.facts["job_id"]
        # Settled but not read (read=False keeps it): ownership, not retention, answers.
        settled = await first.shell.wait(job_id, read=False)
        stolen = await second.run_tool("job_output", {"job_id": job_id})
        stolen_kill = await second.run_tool("kill_job", {"job_id": job_id})
        own = await first.run_tool("job_output", {"job_id": job_id})
        assert [handle.id for handle in await second.shell.list()] == []
    assert settled.stdout == "bg\n"
    assert stolen.is_error and "no background job" in stolen.text
    assert stolen_kill.is_error
    assert "exited" in own.text and not own.is_error


def test_the_asyncio_example_runs(scratch, state_dir_outside):
    done = subprocess.run(
        [sys.executable, str(REPO / "examples" / "asyncio_host.py"), scratch],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env={**os.environ, "STOCKADE_STATE_DIR": state_dir_outside},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[sandbox: file access denied under read-only mode]" in done.stdout
    assert (Path(scratch) / "note.txt").read_text() == "hello\n"


def test_the_embedding_example_from_the_docs_runs(scratch, state_dir_outside):
    tmp_path = Path(state_dir_outside)
    done = subprocess.run(
        [sys.executable, str(REPO / "examples" / "embed.py"), scratch],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env={**os.environ, "STOCKADE_STATE_DIR": str(tmp_path)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[sandbox: file access denied under read-only mode]" in done.stdout
    assert (Path(scratch) / "hello.txt").read_text() == "hi\n"
    assert list(tmp_path.glob("*.jsonl"))  # the session log is real


@pytest.mark.parametrize("where", ["root", "temp root"])
async def test_a_session_log_commands_could_rewrite_is_refused(projects, where):
    root, _ = projects
    state = root / ".state" if where == "root" else Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        # A log in a temp root is refused as the harness opens (every session could
        # write it); one in a session's root when that session opens.
        with pytest.raises(ConfigError, match="a confined command can write there"):
            async with open_harness(composition(str(state))) as harness:
                await harness.open_session(cwd=root)
        assert not list(state.glob("*.jsonl"))  # refused before anything was written
    finally:
        shutil.rmtree(state, ignore_errors=True)
