"""The models: the scripted one reads its place from the history alone; the
chat-completions mapping is pure (no network in the tests)."""

from __future__ import annotations

import json

import pytest

from stockade.acp.events import PromptReceived, ReplyGiven
from stockade.acp.model import (
    ChatCompletionsModel,
    ModelError,
    ScriptedModel,
    chat_request,
    parse_chat_response,
)
from stockade.acp.transcript import chat_messages
from stockade.policy import PolicyContext
from stockade.tools.events import ToolCalled, ToolResulted
from stockade.vocab import ApprovalPolicy, SandboxMode, denial_marker

DENIED = f"[exit code: 1]\n{denial_marker(SandboxMode.READ_ONLY)}"


def history(*events):
    return chat_messages(list(events), "SYSTEM")


def called(step, result_text, *, name="bash"):
    (call,) = step.tool_calls
    return [
        ToolCalled(call_id=call.id, name=name, arguments=call.arguments),
        ToolResulted(call_id=call.id, name=name, text=result_text),
    ]


async def test_the_script_is_played_one_step_per_model_call():
    model = ScriptedModel.from_json(
        [
            [
                {"name": "bash", "arguments": {"command": "echo a > f"}},
                {"escalate": "workspace-write", "justification": "the note"},
            ],
            [{"reply": "policy"}],
        ]
    )
    log = [PromptReceived(text="go")]
    first = await model.step(history(*log), [])
    assert first.tool_calls[0].arguments == {"command": "echo a > f"}
    log += called(first, DENIED)
    retry = await model.step(history(*log), [])
    assert retry.tool_calls[0].arguments == {
        "command": "echo a > f",
        "sandbox_permissions": "workspace-write",
        "justification": "the note",
    }
    log += called(retry, "the user rejected it")
    end = await model.step(history(*log), [])
    assert end.tool_calls == ()
    assert end.text == "(scripted) the last result I was given:\nthe user rejected it"
    log += [ReplyGiven(text=end.text), PromptReceived(text="and now?")]
    log.append(
        PolicyContext(
            text="POLICY",
            sandbox_mode=SandboxMode.READ_ONLY,
            workspace_root="/w",
            approval_policy=ApprovalPolicy.ASK,
        )
    )
    second_turn = await model.step(history(*log), [])
    assert second_turn.text == "(scripted) the policy I was given:\nPOLICY"


async def test_an_escalation_step_is_skipped_when_nothing_was_denied():
    model = ScriptedModel.from_json(
        [[{"name": "bash", "arguments": {"command": "true"}}, {"escalate": "next"}]]
    )
    log = [PromptReceived(text="go")]
    log += called(await model.step(history(*log), []), "[exit code: 0]")
    end = await model.step(history(*log), [])
    assert end.tool_calls == () and end.text.endswith("[exit code: 0]")


async def test_beyond_the_script_a_prompt_runs_as_a_command_and_escalates_once():
    model = ScriptedModel()
    log = [PromptReceived(text="touch x")]
    first = await model.step(history(*log), [])
    assert first.tool_calls[0].arguments == {"command": "touch x"}
    log += called(first, DENIED)
    retry = await model.step(history(*log), [])
    assert retry.tool_calls[0].arguments["sandbox_permissions"] == "workspace-write"
    log += called(retry, "[exit code: 0]")
    assert (await model.step(history(*log), [])).tool_calls == ()


@pytest.mark.parametrize("script", [{}, [1], [[{"what": 1}]], [[["bash"]]]])
def test_a_malformed_script_is_refused(script):
    with pytest.raises(ValueError):
        ScriptedModel.from_json(script)


def test_the_chat_request_names_the_tools_as_functions():
    tool = {"name": "bash", "description": "run", "parameters": {"type": "object"}}
    body = chat_request("m", [{"role": "user", "content": "hi"}], [tool])
    assert body == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": tool}],
    }


def test_a_chat_response_becomes_one_step():
    data = {
        "choices": [
            {
                "message": {
                    "content": "running it",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "function": {
                                "name": "bash",
                                "arguments": json.dumps({"command": "ls"}),
                            },
                        },
                        {"id": "c2", "function": {"name": "bash", "arguments": "{not json"}},
                    ],
                }
            }
        ]
    }
    step = parse_chat_response(data)
    assert step.text == "running it"
    assert [(c.id, c.name, c.arguments) for c in step.tool_calls] == [
        ("c1", "bash", {"command": "ls"}),
        ("c2", "bash", "{not json"),
    ]
    assert parse_chat_response({"choices": [{"message": {"content": ""}}]}).text is None
    with pytest.raises(ModelError):
        parse_chat_response({"error": "quota"})


def test_the_key_is_never_shown():
    model = ChatCompletionsModel(api_key="sk-secret", model="m", base_url="http://x/v1")
    assert "sk-secret" not in repr(model) and "sk-secret" not in model.description
