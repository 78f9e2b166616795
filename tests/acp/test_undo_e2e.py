"""The person's `/undo` and `/restore` over ACP (issue 42), on the example agent as a
subprocess driven by the SDK's client: advertised in `available_commands_update`,
answered by the agent with one message, never sent to the model; judged on disk and
in the session log."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("acp")

import acp
from stockade.trust import ROOT_PROTECTED

from .support import ScriptedClient, agent, agent_env, log_events, of_type, run, write_script

pytestmark = pytest.mark.kernel

FIRST = "echo one > a.txt; echo keep > b.txt"
SECOND = "echo two > a.txt; rm b.txt; mkdir d; echo new > d/new.txt"
AFTER_BOTH = {"a.txt": "two\n", "d": None, "d/new.txt": "new\n"}
AFTER_FIRST = {"a.txt": "one\n", "b.txt": "keep\n"}


def tree(root: Path) -> dict[str, str | None]:
    """The workspace's own files (not the sandbox's placeholders for the protected
    names, `.git`, `stockade.yml` and the agents' settings, there while it runs)."""
    found: dict[str, str | None] = {}
    for path in sorted(root.rglob("*")):
        top = path.relative_to(root).parts[0]
        if top.startswith(".") or top in {name.rstrip("/") for name in ROOT_PROTECTED}:
            continue
        found[str(path.relative_to(root))] = None if path.is_dir() else path.read_text()
    return found


@pytest.fixture
def workspace(scratch) -> Path:
    path = Path(scratch) / "project"
    path.mkdir()
    return path


def test_undo_and_restore_commands_are_the_persons(workspace, scratch, state_dir_outside):
    script = write_script(
        Path(scratch),
        [
            [{"name": "bash", "arguments": {"command": FIRST}}],
            [{"name": "bash", "arguments": {"command": SECOND}}],
        ],
    )
    client = ScriptedClient()
    commands = ["/undo", "/undo {first}", "/undo {second}", "/undo", "/restore {first}"]
    commands += ["/restore", "/undo seven"]

    async def scenario() -> dict:
        async with agent(client, state_dir_outside, "--script", script) as (conn, _process):
            session = await conn.new_session(cwd=str(workspace))
            sid = session.session_id
            stops, trees, replies = [], [], []
            for words in ("first", "second"):
                response = await conn.prompt(session_id=sid, prompt=[acp.text_block(words)])
                stops.append(response.stop_reason)
            trees.append(tree(workspace))
            seqs: dict[str, int] = {}
            for command in commands:
                before = len(client.replies(sid))
                response = await conn.prompt(
                    session_id=sid, prompt=[acp.text_block(command.format(**seqs))]
                )
                stops.append(response.stop_reason)
                trees.append(tree(workspace))
                replies.append(client.replies(sid)[before:])
                if not seqs:
                    [listing] = replies[0]
                    found = re.findall(r"^call (\d+): bash ", listing, re.M)
                    seqs = {"first": int(found[0]), "second": int(found[1])}
            return {"sid": sid, "stops": stops, "trees": trees, "replies": replies, **seqs}

    outcome = run(scenario())
    sid, first, second = outcome["sid"], outcome["first"], outcome["second"]
    assert outcome["stops"] == ["end_turn"] * 9
    replies = [reply for [reply] in outcome["replies"]]  # one message per command

    # Advertised to the editor as the session's commands.
    advertised = [
        update
        for update in client.updates[sid]
        if update.session_update == "available_commands_update"
    ]
    assert [command.name for command in advertised[0].available_commands] == ["undo", "restore"]

    assert replies[0] == (
        f"call {first}: bash (2 created, 0 modified, 0 deleted): {FIRST}\n"
        f"call {second}: bash (2 created, 1 modified, 1 deleted): {SECOND}"
    )
    # Undoing the first call would overwrite the second's changes: refused, nothing touched.
    assert replies[1].startswith(f"not done: cannot undo call {first}: ")
    assert replies[1].endswith(f"in the way: seq {second}")
    assert outcome["trees"][:3] == [AFTER_BOTH, AFTER_BOTH, AFTER_BOTH]
    assert replies[2] == (
        f"undid call {second}: 2 created removed, 1 modified put back, 1 deleted restored"
    )
    assert outcome["trees"][3] == AFTER_FIRST
    assert f"call {second}: bash (2 created, 1 modified, 1 deleted, undone): " in replies[3]
    assert replies[4] == f"restored to before seq {first}: 2 created removed"
    assert outcome["trees"][5] == {}
    assert replies[5] == "/restore takes a seq: /restore SEQ (see /undo for the calls' seqs)"
    assert replies[6].startswith("/undo takes a seq, a whole number 1 or more, not 'seven'")
    assert outcome["trees"][7] == {}

    # The model never saw a command: two prompts, two tool calls, all from the script.
    log = log_events(state_dir_outside, sid)
    assert [event["text"] for event in of_type(log, "acp/prompt")] == ["first", "second"]
    # Each command is logged with its answer, for session/load (never for the model).
    answered = of_type(log, "acp/command")
    assert [event["text"] for event in answered] == [
        command.format(first=first, second=second) for command in commands
    ]
    assert [event["answer"] for event in answered] == replies
    assert len(of_type(log, "tool/call")) == 2
    assert [event["call"] for event in of_type(log, "files/undone")] == [second]
    assert [event["before"] for event in of_type(log, "files/restored")] == [first]
    tool_calls = [u for u in client.updates[sid] if u.session_update == "tool_call"]
    assert len(tool_calls) == 2

    # A new agent loading the session replays each command and its answer, in order.
    loader = ScriptedClient()

    async def load() -> None:
        async with agent(loader, state_dir_outside, "--script", script) as (conn, _process):
            await conn.load_session(session_id=sid, cwd=str(workspace))

    run(load())
    chunks = [
        (update.session_update, update.content.text)
        for update in loader.updates[sid]
        if update.session_update in ("user_message_chunk", "agent_message_chunk")
    ]
    expected = []
    for command, reply in zip(commands, replies, strict=True):
        typed = command.format(first=first, second=second)
        expected += [("user_message_chunk", typed), ("agent_message_chunk", reply)]
    assert chunks[0] == ("user_message_chunk", "first")
    assert chunks[-len(expected) :] == expected

    # The agent gone, the person's command line reads the same session (its log holds
    # the ACP conversation's events too).
    listed = subprocess.run(
        [sys.executable, "-m", "stockade", "session", "undo", sid, "--json"],
        capture_output=True,
        text=True,
        check=False,
        env={**agent_env(state_dir_outside), "PATH": "/usr/bin:/bin"},
        cwd=scratch,
    )
    assert listed.returncode == 0, listed.stdout + listed.stderr
    calls = json.loads(listed.stdout)["calls"]
    assert [(call["seq"], call["undone"]) for call in calls] == [(first, False), (second, True)]


class ChatModel(BaseHTTPRequestHandler):
    """A chat-completions endpoint on loopback that records what it is sent: its first
    answer asks for one bash call, every later one ends the turn."""

    seen: list[list[dict[str, Any]]]

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append(body["messages"])
        if len(self.seen) == 1:
            call = {"name": "bash", "arguments": json.dumps({"command": "echo one > a.txt"})}
            message = {"content": None, "tool_calls": [{"id": "call_one", "function": call}]}
        else:
            message = {"content": "done"}
        data = json.dumps({"choices": [{"message": message}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def chat_model() -> Iterator[tuple[str, list[list[dict[str, Any]]]]]:
    seen: list[list[dict[str, Any]]] = []
    handler = type("Recording", (ChatModel,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    finally:
        server.shutdown()
        server.server_close()


def test_the_model_is_told_of_the_persons_undo(workspace, state_dir_outside, chat_model):
    """The person's `/undo` never reaches the model as a prompt, but its effect does: the
    model's next request holds a system note naming the call it made and what the undo
    put back, so it does not go on believing the file it wrote is there."""
    base_url, seen = chat_model
    client = ScriptedClient()

    async def scenario() -> tuple[int, list[str]]:
        env = {"OPENAI_API_KEY": "sk-test", "NO_PROXY": "*", "no_proxy": "*"}
        async with agent(
            client, state_dir_outside, "--model", "m", "--base-url", base_url, env=env
        ) as (conn, _process):
            session = await conn.new_session(cwd=str(workspace))
            sid = session.session_id
            await conn.prompt(session_id=sid, prompt=[acp.text_block("make a.txt")])
            made = (workspace / "a.txt").read_text()
            await conn.prompt(session_id=sid, prompt=[acp.text_block("/undo")])
            [listing] = re.findall(r"^call (\d+): bash ", client.replies(sid)[-1], re.M)
            await conn.prompt(session_id=sid, prompt=[acp.text_block(f"/undo {listing}")])
            await conn.prompt(session_id=sid, prompt=[acp.text_block("what is in a.txt?")])
            return int(listing), [made, client.replies(sid)[-2]]

    seq, (made, answer) = run(scenario())
    assert made == "one\n"
    assert answer == f"undid call {seq}: 1 created removed"
    assert not (workspace / "a.txt").exists()
    # Three model requests: the call, its result, and the prompt after the undo.
    assert len(seen) == 3
    assert all("/undo" not in json.dumps(m) for m in seen[2] if m["role"] == "user")
    system = [m["content"] for m in seen[2] if m["role"] == "system"]
    notes = [text for text in system if text.startswith("Between your turns")]
    assert notes == [
        f"Between your turns the person undid call {seq} (seq {seq} was your tool call "
        '"call_one", "bash: echo one > a.txt"): 1 created removed. Paths, as JSON strings: '
        'removed: ["a.txt"]. What earlier tool results showed of these files may no '
        "longer hold: read them again before relying on them."
    ]
    assert seen[2][-1] == {"role": "user", "content": "what is in a.txt?"}
