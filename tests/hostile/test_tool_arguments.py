"""Tool-call arguments as a model might send them, through AgentSession.run_tool on a
real harness: every malformed call gets a clear model-facing error and runs nothing.

"Runs nothing" is checked on disk: every command would create a marker file. "Clear"
means `ToolResult.is_error`, no traceback text, and the session goes on (the next
call works and the log still reads back).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import trio

from stockade import open_harness
from stockade.approval.answerers import ScriptedAnswerer
from stockade.sessionlog import scan_log
from stockade.tools.events import ToolCalled, ToolResulted

from ..faults._support import composition

TEN_MB = 10 * 1024 * 1024


def malformed(marker: Path) -> list[tuple[str, Any, str]]:
    """(tool, arguments, a phrase the error must contain)."""
    touch = f"touch {marker}"
    return [
        # wrong types
        ("bash", {"command": 7}, "Expected `str`"),
        ("bash", {"command": ["touch", str(marker)]}, "Expected `str`"),
        ("bash", {"command": None}, "Expected `str`"),
        ("bash", {"command": {"cmd": touch}}, "Expected `str`"),
        ("bash", {"command": touch, "background": "yes"}, "Expected `bool`"),
        ("bash", {"command": touch, "background": 1}, "Expected `bool`"),
        ("bash", {"command": touch, "timeout_ms": "100"}, "timeout_ms"),
        ("bash", {"command": touch, "timeout_ms": 1.5}, "timeout_ms"),
        ("bash", {"command": touch, "timeout_ms": True}, "timeout_ms"),
        ("bash", {"command": touch, "timeout_ms": float("inf")}, "timeout_ms"),
        ("bash", {"command": touch, "timeout_ms": float("nan")}, "timeout_ms"),
        ("bash", {"command": touch, "workdir": 5}, "workdir"),
        ("bash", {"command": touch, "justification": 5}, "justification"),
        # missing fields
        ("bash", {}, "missing required field `command`"),
        ("bash", {"workdir": "."}, "missing required field `command`"),
        ("job_output", {}, "missing required field `job_id`"),
        ("kill_job", {"id": "job-1"}, "unknown field `id`"),
        # extra fields
        ("bash", {"command": touch, "extra": 1}, "unknown field `extra`"),
        ("bash", {"command": touch, "Command": touch}, "unknown field `Command`"),
        ("bash", {"command": touch, "sandbox_mode": "danger-full-access"}, "unknown field"),
        # negative and zero timeouts
        ("bash", {"command": touch, "timeout_ms": -5}, ">= 1"),
        ("bash", {"command": touch, "timeout_ms": 0}, ">= 1"),
        ("bash", {"command": touch, "timeout_ms": -(2**70)}, "timeout_ms"),
        # escalation fields, alone or wrong
        ("bash", {"command": touch, "sandbox_permissions": "root"}, "sandbox_permissions"),
        (
            "bash",
            {"command": touch, "sandbox_permissions": "root", "justification": "please"},
            "sandbox_permissions",
        ),
        ("bash", {"command": touch, "justification": "no permissions given"}, "go together"),
        ("bash", {"command": touch, "sandbox_permissions": "danger-full-access"}, "go together"),
        (
            "bash",
            {"command": touch, "sandbox_permissions": "danger-full-access", "justification": ""},
            "go together",
        ),
        (
            "bash",
            {"command": touch, "sandbox_permissions": "workspace-write", "justification": "x"},
            "is not wider",
        ),
        (
            "bash",
            {"command": touch, "sandbox_permissions": None, "justification": "x"},
            "go together",
        ),
        # not a dict at all
        ("bash", [touch], "Expected `object`, got `array`"),
        ("bash", touch, "Expected `object`, got `str`"),
        ("bash", None, "Expected `object`, got `null`"),
        ("bash", 42, "Expected `object`, got `int`"),
        ("bash", {1: touch}, "Expected `str`"),
        ("job_output", [], "Expected `object`"),
        ("kill_job", "job-1", "Expected `object`"),
        # a NUL in a file tool's path
        ("write_file", {"path": "a\x00b", "content": "x"}, "NUL"),
        ("read_file", {"path": f"{marker}\x00"}, "NUL"),
        # not a tool
        ("rm_rf", {"command": touch}, "unknown tool 'rm_rf'"),
        ("bash\x00", {"command": touch}, "unknown tool"),
        ("", {"command": touch}, "unknown tool ''"),
        # huge strings: a 10 MB command exceeds what exec takes (one argument <= 128 KiB)
        ("bash", {"command": f"{touch}; : {'x' * TEN_MB}"}, "Argument list too long"),
        ("bash", {"command": f"{touch}; : {'x' * TEN_MB}", "background": True}, "too long"),
    ]


def assert_model_facing_error(result, phrase: str, case: Any) -> None:
    assert result.is_error, (case, result.text[:300])
    assert "Traceback" not in result.text and 'File "' not in result.text, case
    assert phrase in result.text, (case, result.text[:300])
    assert len(result.text) < 4096, (case, len(result.text))  # a huge input is not echoed


async def test_malformed_calls_get_a_clear_error_and_run_nothing(state_dir, project):
    marker = project / "ran"
    scripted = ScriptedAnswerer(["allowed-once"] * 10)
    cases = malformed(marker)
    async with open_harness(composition(state_dir, fs=True), answerers=[scripted]) as harness:
        session = await harness.open_session(cwd=project)
        for tool, arguments, phrase in cases:
            started = time.monotonic()
            with trio.fail_after(20):
                result = await session.run_tool(tool, arguments)
            case = (tool, repr(arguments)[:80])
            assert_model_facing_error(result, phrase, case)
            assert time.monotonic() - started < 10, case
            assert not marker.exists(), case
        assert scripted.seen == [], "nobody is asked for a malformed escalation"
        after = await session.run_tool("bash", {"command": "echo still fine"})
        assert after.text.startswith("still fine")
        events = await session.events()
    # Every call and its result were logged, and the log reads back as it was written.
    calls = [e for e in events if isinstance(e, ToolCalled)]
    results = [e for e in events if isinstance(e, ToolResulted)]
    assert len(calls) == len(results) == len(cases) + 1
    assert all(result.is_error for result in results[:-1])
    log = Path(state_dir) / f"{session.id}.jsonl"
    assert scan_log(log.read_bytes(), str(log), harness.log.registry).events == events
    assert not marker.exists()


async def test_huge_but_valid_timeouts_run_normally(state_dir, project):
    async with open_harness(composition(state_dir)) as harness:
        session = await harness.open_session(cwd=project)
        for timeout_ms in (2**31, 2**63 - 1, 10**30):
            result = await session.run_tool(
                "bash", {"command": "echo ok", "timeout_ms": timeout_ms}
            )
            assert (result.is_error, result.text) == (False, "ok\n[exit code: 0]"), timeout_ms


@pytest.mark.parametrize(
    ("tool", "arguments", "phrase"),
    [
        pytest.param(
            "bash",
            {"command": "touch {marker}", "workdir": "d" * TEN_MB},
            "too long",
            id="huge-workdir",
        ),
        pytest.param(
            "job_output",
            {"job_id": "x" * TEN_MB},
            "no background job",
            id="huge-job-id",
        ),
        pytest.param(
            "kill_job",
            {"job_id": "x" * TEN_MB},
            "no background job",
            id="huge-kill-id",
        ),
    ],
)
async def test_a_huge_argument_is_not_echoed_back_whole(
    state_dir, project, tool, arguments, phrase
):
    marker = project / "ran"
    arguments = {
        key: value.replace("{marker}", str(marker)) if isinstance(value, str) else value
        for key, value in arguments.items()
    }
    async with open_harness(composition(state_dir)) as harness:
        session = await harness.open_session(cwd=project)
        result = await session.run_tool(tool, arguments)
    assert not marker.exists()
    assert_model_facing_error(result, phrase, tool)


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param({"command": "touch {marker}\x00"}, id="nul-command"),
        pytest.param({"command": "touch {marker}\x00", "background": True}, id="nul-bg"),
        pytest.param({"command": "touch {marker}", "workdir": "a\x00b"}, id="nul-dir"),
        pytest.param({"command": "touch {marker} \ud800"}, id="surrogate"),
        pytest.param({"command": "touch {marker} \udcff"}, id="surrogate-esc"),
        pytest.param({"command": "touch {marker}", "workdir": "\ud800"}, id="surrogate-dir"),
        pytest.param({"command": "touch {marker}", "timeout_ms": 10**400}, id="overflow"),
    ],
)
async def test_unencodable_arguments_get_a_clear_error_and_run_nothing(
    state_dir, project, arguments
):
    marker = project / "ran"
    arguments = {
        key: value.replace("{marker}", str(marker)) if isinstance(value, str) else value
        for key, value in arguments.items()
    }
    async with open_harness(composition(state_dir)) as harness:
        session = await harness.open_session(cwd=project)
        try:
            result = await session.run_tool("bash", arguments)
            assert result.is_error and "Traceback" not in result.text, result.text
        finally:
            assert not marker.exists()
        after = await session.run_tool("bash", {"command": "echo still fine"})
        assert after.text.startswith("still fine")


async def test_a_surrogate_no_longer_poisons_the_session_log(state_dir, project):
    """A lone surrogate cannot be a JSON line: the call is logged escaped, the tool
    refuses the text, and the session keeps working (also after a resume)."""
    from stockade.events import UnencodableEvent
    from stockade.tools.events import ToolCalled

    async with open_harness(composition(state_dir)) as harness:
        session = await harness.open_session(cwd=project)
        with pytest.raises(UnencodableEvent, match="surrogates not allowed"):
            await session.session.append(
                ToolCalled(call_id="x", name="bash", arguments={"command": "\ud800"})
            )
        refused = await session.run_tool("bash", {"command": "echo \ud800"})
        after = await session.run_tool("bash", {"command": "echo still fine"})
        assert refused.is_error and "not valid UTF-8" in refused.text
        assert after.text.startswith("still fine")
        await session.close()
        resumed = await harness.resume_session(session.id)
        events = await resumed.events()
    tags = [event.tag for event in events]
    assert tags.count("tool/call") == tags.count("tool/result") == 2
    escaped = next(e for e in events if isinstance(e, ToolCalled))
    assert escaped.arguments == {"_raw": ascii({"command": "echo \ud800"})}
