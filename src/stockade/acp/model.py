"""The pluggable model behind the ACP agent: a scripted one and a chat-completions client.

A model takes the chat history (`transcript.chat_messages`) and the harness's tool
schemas and returns one step: text, tool calls, or both. The agent runs the tool
calls, logs everything, and asks again until a step has no tool calls.

- `ScriptedModel`: no network, no key (the tests and the demo). Its state is the
  history it is given, so it behaves the same after a restart.
- `ChatCompletionsModel`: any OpenAI-compatible `/chat/completions` endpoint, used
  when an API key is configured. The request and response mapping are pure
  functions; the POST runs in a worker thread (standard library only).
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
import uuid
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, Final, Protocol

import attrs
import trio

from ..reprs import fields_repr
from ..vocab import SandboxMode, allowed_modes


@attrs.frozen
class ToolCall:
    __repr__ = fields_repr
    id: str
    name: str
    # As the model sent them: normally a JSON object, passed on verbatim otherwise.
    arguments: Any


@attrs.frozen
class ModelStep:
    __repr__ = fields_repr
    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()


class ModelError(Exception):
    """The model could not be asked (network, HTTP status, a reply of the wrong shape)."""


class Model(Protocol):
    @property
    def description(self) -> str: ...

    async def step(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> ModelStep: ...


# --- no model configured -------------------------------------------------------------


@attrs.frozen
class UnconfiguredModel:
    """What the agent runs when no model is configured: every prompt is answered with
    the one line that says what to configure, and nothing runs."""

    __repr__ = fields_repr

    text: str
    description: str = "none configured"

    async def step(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> ModelStep:
        return ModelStep(text=self.text)


# --- the scripted model --------------------------------------------------------------

_DENIED: Final = re.compile(r"\[sandbox: file access denied under ([a-z-]+) mode\]")
_SCRIPT_ID: Final = re.compile(r"^script-(\d+)-(\d+)-")


def _wider(mode: str) -> str | None:
    order = allowed_modes()
    if mode not in order or mode == order[-1]:
        return None
    return order[order.index(mode) + 1]


@attrs.frozen
class ScriptedModel:
    """Plays a script: one list of steps per prompt (turn), in order.

    A step is one of:

    - `{"name": TOOL, "arguments": {...}}`: call that tool;
    - `{"escalate": MODE | "next", "justification": TEXT}`: when the last bash
      result of this turn carries the denial marker, retry that same command once
      with `sandbox_permissions` (`next`: the mode just wider than the denied one);
      otherwise skip;
    - `{"reply": "last-result" | "policy" | TEXT}`: end the turn with this text
      (`last-result` quotes the last tool result it was given, `policy` the last
      policy-context message): the proof of what reached the model.

    A turn ends after its last step with a `last-result` reply. A prompt beyond the
    script is run as a bash command (with an escalation to the next mode when it is
    denied): that is the keyless demo in an editor.
    """

    __repr__ = fields_repr

    turns: tuple[tuple[Mapping[str, Any], ...], ...] = ()
    description: str = "scripted"
    # What its replies begin with: `(scripted)` for a script; `(shell)` for `--model
    # shell`, which runs each prompt as one bash command and scripts nothing.
    voice: str = "scripted"

    @classmethod
    def from_json(cls, data: Any) -> ScriptedModel:
        if not isinstance(data, list) or not all(isinstance(turn, list) for turn in data):
            raise ValueError("a script is a JSON list of turns, each a list of steps")
        for turn in data:
            for step in turn:
                if not isinstance(step, dict) or not ({"name", "escalate", "reply"} & set(step)):
                    raise ValueError(f"a script step needs name, escalate or reply: {step!r}")
        return cls(turns=tuple(tuple(turn) for turn in data), description="scripted (file)")

    async def step(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> ModelStep:
        prompts = [index for index, message in enumerate(messages) if message["role"] == "user"]
        if not prompts:
            return ModelStep(text=f"({self.voice}) nothing was asked")
        turn = len(prompts) - 1
        current = list(messages[prompts[-1] :])
        if turn < len(self.turns):
            steps = self.turns[turn]
        else:
            steps = (
                {"name": "bash", "arguments": {"command": str(current[0]["content"])}},
                {"escalate": "next", "justification": "the user asked to run this command"},
            )
        done = [
            int(found.group(2))
            for message in current
            for call in message.get("tool_calls") or ()
            if (found := _SCRIPT_ID.match(call["id"])) and int(found.group(1)) == turn
        ]
        for index in range(max(done, default=-1) + 1, len(steps)):
            step = steps[index]
            if "reply" in step:
                return ModelStep(text=_reply(str(step["reply"]), messages, current, self.voice))
            if "escalate" in step:
                retry = _escalation(step, current)
                if retry is None:
                    continue
                return ModelStep(tool_calls=(_call(turn, index, "bash", retry),))
            return ModelStep(tool_calls=(_call(turn, index, step["name"], step.get("arguments")),))
        return ModelStep(text=_reply("last-result", messages, current, self.voice))


def _call(turn: int, index: int, name: str, arguments: Any) -> ToolCall:
    # The id carries the step, so the next step is read from the history alone.
    call_id = f"script-{turn}-{index}-{uuid.uuid4().hex[:8]}"
    return ToolCall(id=call_id, name=name, arguments=arguments)


def _last(messages: Sequence[Mapping[str, Any]], role: str) -> Mapping[str, Any] | None:
    return next((message for message in reversed(messages) if message["role"] == role), None)


def _reply(
    kind: str, messages: Sequence[Mapping[str, Any]], current: list[Any], voice: str = "scripted"
) -> str:
    if kind == "policy":
        policy = [m for m in messages[1:] if m["role"] == "system"]
        text = policy[-1]["content"] if policy else "(none)"
        return f"({voice}) the policy I was given:\n{text}"
    if kind == "last-result":
        result = _last(current, "tool")
        if result is None:
            return f"({voice}) done"
        if voice == "shell":
            return f"(shell) the prompt ran as a bash command; its result:\n{result['content']}"
        return f"({voice}) the last result I was given:\n{result['content']}"
    return kind


def _escalation(step: Mapping[str, Any], current: list[Any]) -> dict[str, Any] | None:
    """The retry of this turn's last bash command when its result was denied."""
    result = _last(current, "tool")
    if result is None:
        return None
    denied = _DENIED.search(str(result["content"]))
    if denied is None:
        return None
    command = None
    for message in reversed(current):
        for call in message.get("tool_calls") or ():
            if call["id"] == result["tool_call_id"] and call["function"]["name"] == "bash":
                command = json.loads(call["function"]["arguments"]).get("command")
    if not isinstance(command, str):
        return None
    wanted = str(step["escalate"])
    mode = _wider(denied.group(1)) if wanted == "next" else SandboxMode.parse(wanted).value
    if mode is None:
        return None
    return {
        "command": command,
        "sandbox_permissions": mode,
        "justification": str(step.get("justification") or "the task needs this write"),
    }


# --- an OpenAI-compatible chat-completions client ------------------------------------


def chat_request(
    model: str, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The `/chat/completions` request body."""
    return {
        "model": model,
        "messages": [dict(message) for message in messages],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": tool["name"],
                    "description": tool["description"],
                    "parameters": tool["parameters"],
                },
            }
            for tool in tools
        ],
    }


def parse_chat_response(data: Any) -> ModelStep:
    """One step from a `/chat/completions` response; ModelError when it has none."""
    try:
        message = data["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        raise ModelError(f"the model's reply has no message: {str(data)[:300]}") from None
    calls = []
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        raw = function.get("arguments")
        try:
            arguments = json.loads(raw) if isinstance(raw, str) else raw
        except json.JSONDecodeError:
            arguments = raw  # the tool refuses it with its own text, and the model sees that
        calls.append(
            ToolCall(id=str(call.get("id")), name=str(function.get("name")), arguments=arguments)
        )
    text = message.get("content")
    return ModelStep(text=text if isinstance(text, str) and text else None, tool_calls=tuple(calls))


def _post(url: str, api_key: str, body: dict[str, Any], timeout: float) -> Any:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode("utf-8"),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {api_key}"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as error:
        detail = error.read(2000).decode("utf-8", "replace")
        raise ModelError(f"HTTP {error.code} from {url}: {detail}") from None
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise ModelError(f"cannot reach {url}: {error}") from None


def model_secrets(model: object) -> tuple[str, ...]:
    """The credentials a model holds (a chat model's API key): the harness withholds
    them from every command's environment, whatever its policy says."""
    key = getattr(model, "api_key", None)
    return (key,) if isinstance(key, str) and key else ()


@attrs.frozen
class ChatCompletionsModel:
    """An OpenAI-compatible chat-completions endpoint (`base_url` + `/chat/completions`)."""

    __repr__ = fields_repr

    api_key: str = attrs.field(repr=False)
    model: str = "gpt-4o-mini"
    base_url: str = "https://api.openai.com/v1"
    timeout: float = 120.0

    @property
    def description(self) -> str:
        return f"chat-completions {self.model} at {self.base_url}"

    async def step(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> ModelStep:
        url = self.base_url.rstrip("/") + "/chat/completions"
        body = chat_request(self.model, messages, tools)
        post = partial(_post, url, self.api_key, body, self.timeout)
        data = await trio.to_thread.run_sync(post, abandon_on_cancel=True)
        return parse_chat_response(data)
