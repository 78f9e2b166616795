"""`stockade mcp` over stdio, driven by the MCP SDK's own client in both protocol eras:
tools, sandboxed calls, escalation through elicitation, jobs, errors, resume."""

from __future__ import annotations

import pytest
import trio
from mcp.shared.exceptions import MCPError

from stockade import open_harness

from .support import (
    ERAS,
    answering,
    connect,
    events,
    of_type,
    read_status,
    session_id,
    session_id_from,
    text,
)

DENIED = "[sandbox: file access denied under read-only mode]"


def escalate(command: str, mode: str = "workspace-write", **extra):
    return {
        "command": command,
        "sandbox_permissions": mode,
        "justification": "the task needs this file",
        **extra,
    }


@pytest.mark.parametrize("era", ERAS)
async def test_lists_exactly_the_harness_tools(era, root, state_dir, monkeypatch):
    monkeypatch.setenv("STOCKADE_STATE_DIR", str(state_dir))
    async with open_harness(None, cwd=str(root)) as harness:
        expected = harness.tool_schemas()
    stderr = state_dir / "stderr.txt"
    async with connect(root, state_dir, mode=era, stderr=stderr) as client:
        listed = (await client.list_tools()).tools
        status = await read_status(client)
        resources = (await client.list_resources()).resources
        if era == "legacy":
            instructions = client.session.initialize_result.instructions
        else:
            instructions = client.session.discover_result.instructions
    # The harness's tools, then the person's undo (issue 42: tests/mcp/test_undo.py).
    assert [tool.name for tool in listed] == [*(schema["name"] for schema in expected), "undo"]
    for tool, schema in zip(listed[:-1], expected, strict=True):
        assert tool.description == schema["description"]
        assert tool.input_schema == schema["parameters"]
    hints = {tool.name: tool.annotations for tool in listed}
    assert hints["read_file"].read_only_hint and hints["job_output"].read_only_hint
    assert hints["bash"].destructive_hint and not hints["bash"].read_only_hint
    assert hints["undo"].destructive_hint and not hints["undo"].read_only_hint
    assert [resource.uri for resource in resources] == ["stockade://session/status"]
    # The session id is in the instructions, on stderr, and in the status resource.
    assert session_id_from(instructions) == status["session_id"]
    assert f"session {status['session_id']} (new)" in stderr.read_text()
    assert status["workspace_root"] == str(root) and status["sandbox_mode"] == "workspace-write"
    assert status["approval_policy"] == "ask" and status["network"] == "off"


@pytest.mark.parametrize("era", ERAS)
async def test_bash_runs_inside_the_root_and_a_write_outside_is_denied(
    era, root, outside, state_dir
):
    async with connect(root, state_dir, mode=era) as client:
        inside = await client.call_tool("bash", {"command": "pwd; echo hi > in.txt"})
        denied = await client.call_tool("bash", {"command": f"echo x > {outside}/out.txt"})
        sid = await session_id(client)
    assert not inside.is_error and text(inside).startswith(f"{root}\n")
    assert inside.structured_content["exit_code"] == 0
    assert inside.structured_content["mode"] == "workspace-write"
    assert (root / "in.txt").read_text() == "hi\n"
    assert "[sandbox: file access denied under workspace-write mode]" in text(denied)
    assert denied.structured_content["denied"] is True
    assert not (outside / "out.txt").exists()
    # The text is exactly what the harness gave the model, as its log records it.
    logged = {e["call_id"]: e for e in of_type(events(state_dir, sid), "tool/result")}
    for result in (inside, denied):
        assert logged[result.structured_content["call_id"]]["text"] == text(result)


ANSWERS = {
    "approve": (("accept", "approve once"), "allowed-once"),
    "reject": (("accept", "reject"), "rejected"),
    "decline": (("decline", None), "rejected"),
    "cancel": (("cancel", None), "cancelled"),
}


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("answer", ANSWERS)
async def test_escalation_is_asked_through_elicitation(era, answer, root, state_dir):
    (action, decision), outcome = ANSWERS[answer]
    seen: list = []
    command = "echo wrote > out.txt\necho 'two\x1b[2K'"
    elicit = answering(action, decision, seen)
    async with connect(root, state_dir, "--mode", "read-only", mode=era, elicit=elicit) as client:
        first = await client.call_tool("bash", {"command": command})
        assert DENIED in text(first) and not (root / "out.txt").exists()
        retried = await client.call_tool("bash", escalate(command, workdir="."))
        sid = await session_id(client)
    [question] = seen
    # The person sees the exact command (control characters escaped), its cwd, the mode.
    assert "echo wrote > out.txt" in question.message
    assert "echo 'two\\x1b[2K'" in question.message and "\x1b" not in question.message
    assert f"cwd:       {root}" in question.message
    assert "read-only -> workspace-write" in question.message
    assert question.requested_schema["properties"]["decision"]["enum"] == [
        "approve once",
        "reject",
    ]
    log = events(state_dir, sid)
    [asked] = of_type(log, "approval/asked")
    [answered] = of_type(log, "approval/answered")
    assert asked["command"] == command and asked["requested_mode"] == "workspace-write"
    assert answered["decision"] == outcome and answered["answerer"] == "mcp-elicitation"
    if outcome == "allowed-once":
        assert (root / "out.txt").read_text() == "wrote\n"
        assert retried.structured_content["granted"] == "workspace-write"
        assert 'escalation granted once: this call ran under "workspace-write"' in text(retried)
    else:
        assert not (root / "out.txt").exists()
        assert retried.is_error and retried.structured_content["outcome"] == outcome
        assert "Nothing ran" in text(retried)


@pytest.mark.parametrize("era", ERAS)
async def test_a_client_without_elicitation_gets_unavailable(era, root, state_dir):
    async with connect(root, state_dir, "--mode", "read-only", mode=era) as client:
        retried = await client.call_tool("bash", escalate("echo x > out.txt"))
        sid = await session_id(client)
    assert not (root / "out.txt").exists()
    assert retried.is_error and retried.structured_content["outcome"] == "unavailable"
    assert "cannot ask the person" in text(retried)
    [answered] = of_type(events(state_dir, sid), "approval/answered")
    assert answered["decision"] == "unavailable"


async def test_a_person_who_never_answers_is_unavailable_handshake_era(root, state_dir):
    async def never(context, params):
        await trio.sleep_forever()

    async with connect(
        root, state_dir, "--mode", "read-only", "--ask-timeout", "1", mode="legacy", elicit=never
    ) as client:
        with trio.fail_after(20):
            retried = await client.call_tool("bash", escalate("echo x > out.txt"))
    assert not (root / "out.txt").exists()
    assert retried.structured_content["outcome"] == "unavailable"
    assert "within 1 s" in text(retried)


async def test_a_late_answer_grants_nothing_2026_era(root, state_dir):
    """The question rides the result; a retry after the timeout finds the call
    settled as unavailable and cannot turn it into a grant."""
    async with connect(
        root, state_dir, "--mode", "read-only", "--ask-timeout", "1", elicit=answering("accept")
    ) as client:
        arguments = escalate("echo x > out.txt")
        asked = await client.session.call_tool("bash", arguments, allow_input_required=True)
        assert asked.result_type == "input_required"
        await trio.sleep(1.5)
        [key] = asked.input_requests
        late = await client.session.call_tool(
            "bash",
            arguments,
            input_responses={key: {"action": "accept", "content": {"decision": "approve once"}}},
            request_state=asked.request_state,
        )
    assert not (root / "out.txt").exists()
    assert late.structured_content["outcome"] == "unavailable"


async def test_an_answer_applies_only_to_the_call_that_asked(root, outside, state_dir):
    """2026 era: the retry that carries the approval must carry the same tool and
    arguments; another command with the same state is refused and nothing runs."""
    async with connect(
        root, state_dir, "--mode", "read-only", elicit=answering("accept")
    ) as client:
        arguments = escalate("echo approved > out.txt")
        asked = await client.session.call_tool("bash", arguments, allow_input_required=True)
        [key] = asked.input_requests
        approve = {key: {"action": "accept", "content": {"decision": "approve once"}}}
        swapped = escalate(f"echo swapped > {outside}/evil.txt")
        with pytest.raises(MCPError):
            await client.session.call_tool(
                "bash", swapped, input_responses=approve, request_state=asked.request_state
            )
        assert not (outside / "evil.txt").exists() and not (root / "out.txt").exists()
        granted = await client.session.call_tool(
            "bash", arguments, input_responses=approve, request_state=asked.request_state
        )
        # The state is used up: a replay runs nothing again.
        with pytest.raises(MCPError):
            await client.session.call_tool(
                "bash", arguments, input_responses=approve, request_state=asked.request_state
            )
        # And the server keeps serving.
        after = await client.call_tool("bash", {"command": "cat out.txt"})
    assert granted.structured_content["granted"] == "workspace-write"
    assert (root / "out.txt").read_text() == "approved\n"
    assert text(after).startswith("approved\n")
    assert not (outside / "evil.txt").exists()


@pytest.mark.parametrize("era", ERAS)
async def test_file_tools(era, root, outside, state_dir):
    seen: list = []
    elicit = answering("accept", "approve once", seen)
    async with connect(root, state_dir, mode=era, elicit=elicit) as client:
        wrote = await client.call_tool("write_file", {"path": "a.txt", "content": "one\ntwo\n"})
        edited = await client.call_tool("edit_file", {"path": "a.txt", "old": "two", "new": "2"})
        read = await client.call_tool("read_file", {"path": "a.txt"})
        refused = await client.call_tool(
            "write_file", {"path": f"{outside}/b.txt", "content": "secret\x07"}
        )
        granted = await client.call_tool(
            "write_file",
            {
                "path": f"{outside}/b.txt",
                "content": "secret\x07",
                "sandbox_permissions": "danger-full-access",
                "justification": "write outside",
            },
        )
    assert not wrote.is_error and not edited.is_error
    assert (root / "a.txt").read_text() == "one\n2\n"
    assert "one" in text(read) and "2" in text(read)
    assert "[sandbox: file access denied under workspace-write mode]" in text(refused)
    assert refused.structured_content["denied"] is True
    [question] = seen
    assert f"write_file {outside}/b.txt" in question.message
    assert "secret\\x07" in question.message  # the content the person approves, escaped
    assert granted.structured_content["granted"] == "danger-full-access"
    assert (outside / "b.txt").read_text() == "secret\x07"


@pytest.mark.parametrize("era", ERAS)
async def test_a_background_job_is_started_polled_and_killed(era, root, state_dir):
    async with connect(root, state_dir, mode=era) as client:
        started = await client.call_tool(
            "bash", {"command": "echo begun; sleep 60; echo never", "background": True}
        )
        job = started.structured_content["job_id"]
        with trio.fail_after(10):
            while True:
                polled = await client.call_tool("job_output", {"job_id": job})
                if "begun" in text(polled):
                    break
                await trio.sleep(0.05)
        killed = await client.call_tool("kill_job", {"job_id": job})
        after = await client.call_tool("job_output", {"job_id": job})
    assert polled.structured_content["state"] == "running"
    assert killed.structured_content["state"] == "killed"
    assert "never" not in text(killed)
    # Its final output was read: the job is over (reported again, or forgotten).
    assert after.is_error or after.structured_content["state"] == "killed"
    assert "never" not in text(after)


@pytest.mark.parametrize("era", ERAS)
async def test_malformed_calls_get_errors_and_the_server_keeps_serving(era, root, state_dir):
    async with connect(root, state_dir, mode=era) as client:
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("rm_rf", {"path": "/"})
        wrong_type = await client.call_tool("bash", {"command": 42})
        extra = await client.call_tool("bash", {"command": "true", "sudo": True})
        missing = await client.call_tool("job_output", {})
        fine = await client.call_tool("bash", {"command": "echo still here"})
    assert "unknown tool 'rm_rf'" in str(unknown.value)
    for result in (wrong_type, extra, missing):
        assert result.is_error and "invalid arguments" in text(result)
    assert not fine.is_error and text(fine).startswith("still here\n")


async def test_resume_by_session_id_keeps_the_mode(root, state_dir):
    sid = "mcp-resume-test"
    async with connect(root, state_dir, "--session-id", sid, "--mode", "read-only") as client:
        before = await read_status(client)
        await client.call_tool("bash", {"command": "true"})
    # Restarted without --mode: the mode comes back from the session log.
    stderr = state_dir / "again.txt"
    async with connect(root, state_dir, "--session-id", sid, stderr=stderr) as client:
        after = await read_status(client)
        denied = await client.call_tool("bash", {"command": "echo x > out.txt"})
    assert before["session_id"] == after["session_id"] == sid
    assert after["sandbox_mode"] == "read-only"
    assert DENIED in text(denied) and not (root / "out.txt").exists()
    assert f"session {sid} (resumed)" in stderr.read_text()
    assert len(of_type(events(state_dir, sid), "tool/result")) == 2


async def test_resume_a_session_another_face_wrote(root, state_dir, monkeypatch):
    """A session the ACP agent began (its log holds `acp/prompt`) resumes here too: the
    MCP face decodes every event a shipped face writes, as `stockade session` does."""
    from stockade.acp import ACP_EVENTS, PromptReceived

    sid = "mcp-resume-acp"
    monkeypatch.setenv("STOCKADE_STATE_DIR", str(state_dir))
    async with open_harness(None, cwd=str(root), extra_events=ACP_EVENTS) as harness:
        session = await harness.open_session(sid, cwd=str(root))
        await session.session.append(PromptReceived(text="begun over ACP"))
    stderr = state_dir / "resumed.txt"
    async with connect(root, state_dir, "--session-id", sid, stderr=stderr) as client:
        status = await read_status(client)
        ran = await client.call_tool("bash", {"command": "echo ok"})
    assert status["session_id"] == sid, stderr.read_text()
    assert "ok" in text(ran)
    assert f"session {sid} (resumed)" in stderr.read_text()
    assert [e["text"] for e in of_type(events(state_dir, sid), "acp/prompt")] == ["begun over ACP"]


async def test_approval_never_fails_closed_without_asking(root, state_dir):
    seen: list = []
    elicit = answering("accept", "approve once", seen)
    async with connect(
        root, state_dir, "--mode", "read-only", "--approval", "never", elicit=elicit
    ) as client:
        status = await read_status(client)
        retried = await client.call_tool("bash", escalate("echo x > out.txt"))
    assert status["approval_policy"] == "never" and not seen
    assert retried.structured_content["outcome"] == "unavailable"
    assert not (root / "out.txt").exists()


async def test_the_composition_decides_the_tools(root, scratch, state_dir, monkeypatch):
    """--config loads a composition as `stockade run` does; its tools are the ones
    listed (no fs entry: no file tools). An implicit ./stockade.yml is refused."""
    from pathlib import Path

    from ..support import stockade

    config_dir = Path(scratch) / "config"
    config_dir.mkdir()
    config = config_dir / "stockade.yml"
    config.write_text(
        "- {id: sandbox, name: stockade.sandbox.local}\n"
        "- {id: bash, name: stockade.bash.sandbox, config: {mode: read-only}}\n"
        "- {id: approval, name: stockade.approval.user}\n"
        "- {id: log, name: stockade.session.log}\n"
    )
    monkeypatch.setenv("STOCKADE_STATE_DIR", str(state_dir))
    async with open_harness(str(config), cwd=str(root)) as harness:
        expected = [schema["name"] for schema in harness.tool_schemas()]
    async with connect(root, state_dir, "--config", str(config)) as client:
        listed = [tool.name for tool in (await client.list_tools()).tools]
        status = await read_status(client)
    assert listed == [*expected, "undo"] == ["bash", "job_output", "kill_job", "undo"]
    assert status["sandbox_mode"] == "read-only"
    (root / "stockade.yml").write_text(config.read_text())
    refused = stockade("mcp", cwd=str(root), env={"STOCKADE_STATE_DIR": str(state_dir)})
    assert refused.returncode == 2
    assert "does not load it implicitly" in refused.stderr
